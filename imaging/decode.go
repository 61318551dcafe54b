package imaging

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"path/filepath"
	"slices"
	"strings"

	// Decoders for image.Decode, registered for DecodeImage and for
	// callers of Preprocess that decode with image.Decode.
	_ "image/gif" // GIF (the first frame)
	"image/jpeg"  // JPEG: baseline, progressive, gray, YCbCr, CMYK; libjpeg-turbo for the rest
	_ "image/png" // PNG: all bit depths, palettes, 16-bit

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp" // lossy and lossless

	"github.com/bicyc/bicyc/bounded"
)

// MaxImagePixels is the largest width*height an image header may declare
// (16 Mpx, e.g. 4096x4096) before DecodeImageFile, image folders and, by
// default, inference refuse to decode it: a guard against decompression
// bombs, whose small files declare huge images. Decoding takes up to 8
// bytes per pixel (16-bit RGBA) and preprocessing 8 more for its opaque
// 16-bit copy (Preprocess.Pixels), so one image of this size peaks near
// 256 MiB until it is reduced to the network's input.
const MaxImagePixels = 16 << 20

// ErrFormat marks a malformed data file: data in no known image format, a
// corrupt or truncated image, and, for package data's loaders, wrong magic
// bytes, a truncated or oversized payload, inconsistent counts or a record
// size that does not divide the file. It is the one name of this error:
// infer, serve and the loaders of training data all wrap it.
var ErrFormat = errors.New("malformed data file")

// ErrTooLarge means an image header declares more pixels than the
// limit, or its encoded data is longer than MaxImageBytes allows; the image
// was not decoded.
var ErrTooLarge = errors.New("image too large")

// ErrUnsupported means an image is valid as far as can be told but uses a
// feature no decoder of this build implements; it is not called corrupt.
// JPEGs Go's image/jpeg refuses are decoded by libjpeg-turbo instead
// (DecodeImage), so with cgo this is rare.
var ErrUnsupported = errors.New("unsupported image")

// MaxImageBytes is the most encoded bytes DecodeImage reads for an image of
// at most maxPixels pixels: an uncompressed 16-bit RGBA image of that size
// (8 bytes per pixel) plus 1 MiB of headers and metadata, 129 MiB at
// MaxImagePixels. A longer stream is refused (ErrTooLarge) without
// being read further: an endless input (/dev/zero) ends there.
func MaxImageBytes(maxPixels int64) int64 { return 8*maxPixels + 1<<20 }

// ImageExtensions are the file name extensions (lower case, with the dot)
// of the formats DecodeImage reads; directory walks (package data's ImageFiles) take only
// files with one of them.
var ImageExtensions = []string{".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp"}

// formatNames are the formats registered above, for error messages.
var formatNames = []string{"png", "jpeg", "gif", "bmp", "tiff", "webp"}

// IsImageFile reports whether name has one of ImageExtensions, in any case.
func IsImageFile(name string) bool {
	return slices.Contains(ImageExtensions, strings.ToLower(filepath.Ext(name)))
}

// DecodeImage is the one image decoder of bicyc: training's image folders
// and inference (files, standard input, HTTP bodies) all decode through it.
// It reads one image in PNG, JPEG, GIF (first frame), BMP, TIFF or WebP,
// detected from the content, and returns it with its format name ("png",
// ...). A JPEG is returned upright, as it is displayed: its EXIF
// Orientation tag (a phone's portrait photo is stored sideways with tag 6)
// is applied, as browsers and Pillow's ImageOps.exif_transpose do, by a
// view with bounds at (0, 0) that maps each pixel to the stored one; an
// unreadable tag is ignored. Other formats are returned as stored. Bounds,
// checked before memory or time is committed:
//
//   - the header is decoded first, and an image whose width*height exceeds
//     maxPixels is refused without decoding its pixels: a few kilobytes of
//     PNG can declare a 100000x100000 image, 40 GB decoded;
//   - at most MaxImageBytes(maxPixels) bytes are read from r, streamed into
//     the decoder rather than buffered whole (except a JPEG's, below);
//   - a JPEG is read whole first and refused, before any pixel is decoded,
//     when it has more than MaxJPEGScans scans or its scans sum to more
//     than MaxJPEGScanPasses passes over maxPixels pixels: a progressive
//     JPEG of a few hundred kilobytes can repeat its scans thousands of
//     times, each one a pass over the whole image.
//
// Errors are lowercase and say what is wrong (empty data, unknown format,
// corrupt header, truncated or corrupt pixels, too large); the caller adds
// the file name. A problem with the content wraps ErrFormat, plus
// image.ErrFormat for data in no known format and ErrTooLarge for a
// refused size or budget; an error of r is wrapped as it is. DecodeImage
// never panics on bad data: a decoder panic becomes an error. It is safe
// for concurrent use.
func DecodeImage(r io.Reader, maxPixels int64) (img image.Image, format string, err error) {
	return DecodeImageContext(context.Background(), r, maxPixels)
}

// DecodeImageContext is DecodeImage, stopped when ctx is done: reading,
// Go's decoders and libjpeg-turbo stop within a short read or a row of
// blocks, and the error wraps ctx.Err(). A server decodes a request's
// images with the request's context, so a client that leaves or a passed
// deadline frees its decoder.
func DecodeImageContext(ctx context.Context, r io.Reader, maxPixels int64) (img image.Image, format string, err error) {
	defer func() {
		if p := recover(); p != nil {
			img, err = nil, formatError{fmt.Errorf("corrupt %s image: decoder failed: %v", format, p)}
		}
	}()
	src := &readErrors{r: ctxReader{ctx: ctx, r: r}}
	limited := bounded.NewReader(src, MaxImageBytes(maxPixels))
	// The header is read through a copy, so the pixels are decoded from
	// the same bytes without seeking or buffering the whole stream.
	var header bytes.Buffer
	cfg, format, err := image.DecodeConfig(io.TeeReader(limited, &header))
	if serr := streamError(limited, src); serr != nil {
		return nil, format, serr
	}
	if format == "jpeg" {
		return decodeJPEG(ctx, &header, limited, src, cfg, maxPixels, err)
	}
	if err := configError(format, cfg, maxPixels, header.Len(), err); err != nil {
		return nil, format, err
	}
	img, _, err = image.Decode(io.MultiReader(&header, limited))
	if serr := streamError(limited, src); serr != nil {
		return nil, format, serr
	}
	if err != nil {
		return nil, format, formatError{fmt.Errorf("truncated or corrupt %s image (%dx%d): %w", format, cfg.Width, cfg.Height, err)}
	}
	return img, format, nil
}

// configError is the problem image.DecodeConfig found (err) or the size
// of the image it read refused (checkSize), nil when there is none; n is
// the number of bytes it read.
func configError(format string, cfg image.Config, maxPixels int64, n int, err error) error {
	switch {
	case err != nil && n == 0:
		return formatError{errors.New("empty image data")}
	case errors.Is(err, image.ErrFormat):
		return formatError{fmt.Errorf("unknown image format (want %s): %w", strings.Join(formatNames, ", "), err)}
	case err != nil:
		return formatError{fmt.Errorf("corrupt %s header: %w", format, err)}
	}
	return checkSize(format, cfg, maxPixels)
}

// decodeJPEG decodes a JPEG whose header, read into header by
// image.DecodeConfig (cfg, or the error goErr), is followed by the rest
// of the image in limited. The image is read whole and its scans checked
// against the budget (checkJPEGBudget) before any pixel is decoded; then
// Go's image/jpeg decodes it, or libjpeg-turbo (jpegTurbo) when Go's
// refuses it as unsupported. libjpeg reads the image from memory anyway,
// and a JPEG's encoded bytes are a small part of its decoded size.
func decodeJPEG(ctx context.Context, header *bytes.Buffer, limited *bounded.Reader, src *readErrors, cfg image.Config, maxPixels int64, goErr error) (image.Image, string, error) {
	const format = "jpeg"
	unsupported := isUnsupportedJPEG(goErr)
	if !unsupported {
		if err := configError(format, cfg, maxPixels, header.Len(), goErr); err != nil {
			return nil, format, err
		}
	}
	_, err := header.ReadFrom(limited)
	if serr := streamError(limited, src); serr != nil {
		return nil, format, serr
	}
	if err != nil {
		return nil, format, fmt.Errorf("reading image: %w", err)
	}
	encoded := header.Bytes()
	if err := checkJPEGBudget(encoded, maxPixels); err != nil {
		return nil, format, formatError{err}
	}
	if unsupported {
		return decodeUnsupportedJPEG(ctx, encoded, maxPixels, goErr)
	}
	img, err := jpeg.Decode(ctxReader{ctx, bytes.NewReader(encoded), decodeReadChunk})
	if cerr := ctx.Err(); cerr != nil {
		return nil, format, fmt.Errorf("decoding %s image: %w", format, cerr)
	}
	if err != nil {
		return nil, format, formatError{fmt.Errorf("truncated or corrupt %s image (%dx%d): %w", format, cfg.Width, cfg.Height, err)}
	}
	return orient(img, jpegOrientation(encoded)), format, nil
}

// streamError is the problem of the input itself, nil when there is
// none: longer than its limit, or an error of the reader (reported as
// such, not as the corrupt image a decoder makes of it).
func streamError(limited *bounded.Reader, src *readErrors) error {
	switch {
	case limited.Exceeded:
		return tooLarge(limited)
	case src.err != nil:
		return fmt.Errorf("reading image: %w", src.err)
	}
	return nil
}

// decodeUnsupportedJPEG decodes the JPEG in encoded, whose header Go's
// image/jpeg refused as unsupported (goErr), with libjpeg-turbo
// (jpegTurbo), stopped when ctx is done.
func decodeUnsupportedJPEG(ctx context.Context, encoded []byte, maxPixels int64, goErr error) (image.Image, string, error) {
	const format = "jpeg"
	if jpegTurbo == "" {
		return nil, format, formatError{fmt.Errorf("%w: %s image: %v; this build has no fallback decoder (libjpeg-turbo needs cgo, and no -tags nojpegturbo)", ErrUnsupported, format, goErr)}
	}
	img, err := decodeJPEGTurbo(ctx, encoded, maxPixels)
	switch {
	case ctx.Err() != nil:
		return nil, format, fmt.Errorf("decoding %s image: %w", format, ctx.Err())
	case errors.Is(err, ErrTooLarge):
		return nil, format, formatError{fmt.Errorf("%s %w", format, err)}
	case err != nil:
		return nil, format, formatError{fmt.Errorf("%w: %s image: Go's decoder: %v; %s: %v", ErrUnsupported, format, goErr, jpegTurbo, err)}
	}
	return orient(img, jpegOrientation(encoded)), format, nil
}

// isUnsupportedJPEG reports whether err is image/jpeg's refusal of a
// feature it does not implement (not a sign of a corrupt file).
func isUnsupportedJPEG(err error) bool {
	var u jpeg.UnsupportedError
	return errors.As(err, &u)
}

// checkSize refuses an image whose header declares no pixels or more than
// maxPixels.
func checkSize(format string, cfg image.Config, maxPixels int64) error {
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return formatError{fmt.Errorf("%s header declares an empty %dx%d image", format, cfg.Width, cfg.Height)}
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > maxPixels {
		return formatError{fmt.Errorf("%s header declares %dx%d = %d pixels, more than the limit of %d: %w",
			format, cfg.Width, cfg.Height, px, maxPixels, ErrTooLarge)}
	}
	return nil
}

// DecodeImageFile opens and decodes one image file with DecodeImage and
// the MaxImagePixels limit. Only a regular file is opened
// (bounded.OpenRegular): a named pipe or device is refused at once. Errors
// name the file and wrap ErrFormat when the content does not decode or is
// too large (then also ErrTooLarge), bounded.ErrNotRegular, or the os
// error (fs.ErrNotExist, ...) when the file cannot be read.
func DecodeImageFile(path string) (image.Image, error) {
	f, _, err := bounded.OpenRegular(path)
	if err != nil {
		return nil, fmt.Errorf("imaging: %w", err)
	}
	defer f.Close()
	img, _, err := DecodeImage(f, MaxImagePixels)
	if err != nil {
		return nil, fmt.Errorf("imaging: %s: %w", path, err)
	}
	return img, nil
}

// readErrors passes reads through and keeps the first error other than
// io.EOF, so a failure of the source (a timeout, a body over its limit) is
// reported as such rather than as the corrupt image a decoder makes of it.
type readErrors struct {
	r   io.Reader
	err error
}

func (e *readErrors) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}

func tooLarge(r *bounded.Reader) error {
	return formatError{fmt.Errorf("image data longer than %d bytes: %w", r.Limit(), ErrTooLarge)}
}

// formatError is a problem with an image's content: it reads as its
// message and wraps ErrFormat besides what the message wraps.
type formatError struct{ err error }

func (e formatError) Error() string   { return e.err.Error() }
func (e formatError) Unwrap() []error { return []error{ErrFormat, e.err} }
