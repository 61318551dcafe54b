// Package data loads image-classification datasets, splits their classes
// into class-incremental task streams, and streams them as the augmented,
// normalised float32 NCHW batches training consumes.
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
// into that layout. Open dispatches on a Source. Images are decoded and
// converted by package imaging (DecodeImageFile, Preprocess.Pixels), the
// decoder and test-time preprocessing inference uses too; ImageFiles is the
// one directory walk of image files, which never opens a named pipe,
// device or socket. Loaders never panic on outside data: malformed files
// return an error that names the file and the problem and wraps one of the
// sentinels imaging.ErrFormat, ErrLabelRange, ErrEmptyClass,
// ErrClassMismatch or ErrLayout (or fs.ErrNotExist for a missing file);
// imaging.ErrPreprocess, ErrTaskStream and ErrSource mark invalid
// configuration. Sizes read from headers are checked against limits and
// against the data actually present before memory is committed to them.
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
// TaskStream is a value, safe for concurrent use. A Batcher
// is not safe for concurrent use.
//
// May import: imaging and the ground floor; never models, train, export.
package data
