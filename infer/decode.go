package infer

import (
	"image"
	"io"

	"github.com/bicyc/bicyc/data"
)

// ImageExtensions are the file name extensions (lower case, with the dot) of
// the formats DecodeImage reads: data.ImageExtensions.
var ImageExtensions = data.ImageExtensions

// IsImageFile reports whether name has one of ImageExtensions, in any case.
func IsImageFile(name string) bool { return data.IsImageFile(name) }

// DecodeImage reads one image in PNG, JPEG, GIF (first frame), BMP, TIFF or
// WebP from r, refusing from its header alone an image of more than
// maxPixels pixels, and a JPEG over data.MaxJPEGScans scans or
// data.MaxJPEGScanPasses passes before decoding its pixels
// (ErrImageTooLarge), and reading at most
// data.MaxImageBytes(maxPixels) bytes. A JPEG is returned upright by its
// EXIF Orientation tag. It is data.DecodeImage, the decoder training's
// image folders use too: corrupt or unknown data wraps ErrImageFormat, a
// feature no decoder implements ErrImageUnsupported. It never
// panics on bad data and is safe for concurrent use.
func DecodeImage(r io.Reader, maxPixels int64) (image.Image, string, error) {
	return data.DecodeImage(r, maxPixels)
}
