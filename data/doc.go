// Package data loads image-classification datasets, splits their classes
// into class-incremental task streams, and turns images into the float32
// NCHW tensors the networks consume.
//
// Layout. Every image is stored as uint8 in CHW order (channel, row,
// column); a Dataset holds N of them back to back (NCHW), and batches are
// float32 NCHW after normalisation:
//
//	x[n,c,y,x] = (pix[n,c,y,x]/255 - Mean[c]) / Std[c]
//
// Loaders. LoadFashionMNIST, LoadMNIST and LoadIDX read IDX files (gzip or
// plain, detected by magic bytes); LoadCIFAR10 and LoadCIFAR100 read the
// official binary versions; LoadImageFolder and LoadImageFolders read one
// sub-folder per class (PNG, JPEG, GIF, BMP, TIFF, WebP); LoadPhotoFolders
// also keeps the training images at load resolution (Photos) for random
// resized crops, and ConvertLayout rewrites TinyImageNet and CUB-200-2011
// into that layout. Open dispatches on a Source. DecodeImage is bicyc's one
// image decoder, for training's image folders and for inference alike: one
// pixel limit (MaxImagePixels), a byte limit (MaxImageBytes), a budget of
// JPEG scans (MaxJPEGScans, MaxJPEGScanPasses), a context that stops it
// (DecodeImageContext), JPEGs turned upright by their EXIF orientation, no
// panics;
// ImageFiles is its one directory walk, which never opens a named pipe,
// device or socket. Loaders never panic on outside data: malformed files
// return an error that names the file and the problem and wraps one of the
// sentinels ErrFormat, ErrLabelRange, ErrEmptyClass, ErrClassMismatch or
// ErrLayout (or fs.ErrNotExist for a missing file); ErrPreprocess,
// ErrTaskStream and ErrSource mark invalid configuration. Sizes read from
// headers are checked against limits and against the data actually present
// before memory is committed to them.
//
// Preprocessing. Preprocess.Image is the one test-time preprocessing
// function: evaluation during training and the ONNX inference side both call
// it, so they convert images identically (alpha composited onto Background,
// ITU-R BT.601 luma or RGB, a Catmull-Rom resize that either squashes the
// image to the input size, only when the size differs, or resizes its
// shorter side and crops the centre as torchvision's Resize + CenterCrop,
// then per-channel normalisation). Preprocess is JSON-marshalable with stable
// lower_snake field names because it is written into the model manifest.
//
// Training input. TaskStream assigns classes to tasks (docs/method.md, "Setting":
// tasks bring disjoint class sets). Batcher streams the images of a task in
// shuffled, augmented, normalised mini-batches whose randomness depends only
// on (seed, epoch), so a resumed run reproduces its batches. Augment is the
// training augmentation: random crop with zero padding or torchvision's
// random resized crop (ResizedCrop, from Photos when the dataset has them),
// horizontal flip and,
// for the CIFAR recipe (docs/method.md, "Augmentation"), TrivialAugmentWide, which reproduces
// torchvision's tensor implementation bit for bit (testdata/trivialaugment).
//
// Concurrency. A loaded Dataset is read-only and safe for concurrent reads.
// Preprocess and TaskStream are values, safe for concurrent use. A Batcher
// is not safe for concurrent use.
//
// May import: imaging and the ground floor; never models, train, export.
package data
