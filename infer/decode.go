package infer

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // registers GIF with image.Decode
	_ "image/jpeg" // registers JPEG (baseline, progressive, gray, YCbCr, CMYK)
	_ "image/png"  // registers PNG (all bit depths, palettes, 16-bit)
	"io"
	"path/filepath"
	"strings"

	_ "golang.org/x/image/bmp"  // registers BMP
	_ "golang.org/x/image/tiff" // registers TIFF
	_ "golang.org/x/image/webp" // registers WebP (lossy and lossless)
)

// ErrImageTooLarge means an image header declares more pixels than allowed
// (see WithMaxPixels); the image was not decoded.
var ErrImageTooLarge = errors.New("image too large")

// ImageExtensions are the file name extensions (lower case, with the dot) of
// the formats DecodeImage reads.
var ImageExtensions = []string{".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp"}

// IsImageFile reports whether name has one of ImageExtensions, in any case.
func IsImageFile(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	for _, e := range ImageExtensions {
		if ext == e {
			return true
		}
	}
	return false
}

// DecodeImage reads one image in PNG, JPEG, GIF (first frame), BMP, TIFF or
// WebP from r. It decodes the header first and refuses, without decoding the
// pixels, an image whose width*height exceeds maxPixels (ErrImageTooLarge):
// a few kilobytes of PNG can declare a 100000x100000 image, which would take
// 40 GB to decode. It returns the image and its format name ("png", ...).
//
// Errors are lowercase, say what is wrong (unknown format, truncated or
// corrupt data, too large) and wrap image.ErrFormat (only for data in no
// known format), ErrImageTooLarge, the reader's error or the decoder's
// error; the caller adds the file name. DecodeImage never panics
// on bad data: a decoder panic becomes an error. It is safe for concurrent
// use.
func DecodeImage(r io.Reader, maxPixels int64) (image.Image, string, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, "", fmt.Errorf("reading image: %w", err)
	}
	return decodeBytes(data, maxPixels)
}

func decodeBytes(data []byte, maxPixels int64) (img image.Image, format string, err error) {
	if len(data) == 0 {
		return nil, "", errors.New("empty image data")
	}
	defer func() {
		if p := recover(); p != nil {
			img, err = nil, fmt.Errorf("corrupt %s image: decoder failed: %v", format, p)
		}
	}()
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if errors.Is(err, image.ErrFormat) {
		return nil, "", fmt.Errorf("unknown image format (want %s): %w", strings.Join(formatNames, ", "), err)
	}
	if err != nil {
		return nil, format, fmt.Errorf("corrupt %s header: %w", format, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, format, fmt.Errorf("%s header declares an empty %dx%d image", format, cfg.Width, cfg.Height)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > maxPixels {
		return nil, format, fmt.Errorf("%s header declares %dx%d = %d pixels, more than the limit of %d: %w",
			format, cfg.Width, cfg.Height, px, maxPixels, ErrImageTooLarge)
	}
	img, _, err = image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, format, fmt.Errorf("truncated or corrupt %s image (%dx%d): %w", format, cfg.Width, cfg.Height, err)
	}
	return img, format, nil
}

// formatNames are the formats registered above, for error messages.
var formatNames = []string{"png", "jpeg", "gif", "bmp", "tiff", "webp"}
