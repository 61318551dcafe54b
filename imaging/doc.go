// Package imaging turns image files into the model inputs both sides of
// bicyc use: it is the one decoder and the one test-time preprocessing,
// shared by training's image folders (package data), the model bundle's
// manifest (bundle), the runtime (infer) and the server (serve).
//
// Decoding. DecodeImage (and DecodeImageContext, which a context stops)
// reads PNG, JPEG, GIF (first frame), BMP, TIFF and WebP with one pixel
// limit (MaxImagePixels), a byte limit (MaxImageBytes) and a budget of
// JPEG scans (MaxJPEGScans, MaxJPEGScanPasses) checked before any pixel is
// decoded; JPEGs Go's decoder refuses go to libjpeg-turbo where cgo is
// on; a JPEG comes back upright by its EXIF Orientation tag. It never
// panics on outside data: a malformed image wraps ErrFormat, a feature no
// decoder of this build implements ErrUnsupported, a refused size or
// budget ErrTooLarge. ErrFormat is also the error of package data's
// malformed dataset files: one error, one name. DecodeImageFile reads a
// regular file only; IsImageFile and ImageExtensions name the formats.
//
// Preprocessing. Preprocess.Image is the one test-time preprocessing
// function: evaluation during training and the ONNX inference side both
// call it, so they convert images identically (alpha composited onto
// Background, ITU-R BT.601 luma or RGB, a Catmull-Rom resize that either
// squashes the image to the input size, only when the size differs, or
// resizes its shorter side and crops the centre as torchvision's Resize +
// CenterCrop, then per-channel normalisation). Preprocess is
// JSON-marshalable with stable lower_snake field names because it is
// written into the model manifest. ShorterSideSize, CenterCropWindow and
// CenterCropResize are the crop geometry; FlipHorizontal is the mirror of
// a CHW image (training's flip augmentation, infer's test-time flip).
//
// Imports: only the standard library, golang.org/x/image and bicyc's
// bounded; never a dataset, training or runtime package.
//
// Concurrency. Every function is safe for concurrent use; Preprocess and
// Normalizer are values.
package imaging
