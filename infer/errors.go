package infer

import (
	"errors"

	"github.com/bicyc/bicyc/bounded"
	"github.com/bicyc/bicyc/data"
)

// Sentinels of outside input that callers branch on (errors.Is): each
// error infer returns about an image, an input or the options wraps one of
// them, with the image's index or file named in the message. The image
// ones are package data's, re-exported so a caller needs no other import.
// A call stopped by its context wraps the context's error
// (context.Canceled, context.DeadlineExceeded) instead.
var (
	// ErrImageFormat means image data is not an image of a format infer
	// reads, or is corrupt or truncated (data.ErrFormat).
	ErrImageFormat = data.ErrFormat
	// ErrImageUnsupported means an image looks valid but uses a feature no
	// decoder of this build implements (data.ErrUnsupported).
	ErrImageUnsupported = data.ErrUnsupported
	// ErrImageTooLarge means an image header declares more pixels than
	// allowed (see WithMaxPixels), or its data is longer than
	// data.MaxImageBytes allows; the image was not decoded
	// (data.ErrImageTooLarge).
	ErrImageTooLarge = data.ErrImageTooLarge
	// ErrNotRegular means a path names a named pipe, device or directory,
	// not an image file (bounded.ErrNotRegular); read such a source with
	// ClassifyReader.
	ErrNotRegular = bounded.ErrNotRegular
	// ErrNilImage means an image passed in is nil.
	ErrNilImage = errors.New("image is nil")
	// ErrInputShape means an input does not fit the model: an Input not
	// made by this Classifier's Prepare, or a feature row for Transport of
	// the wrong length or with a NaN or infinite value.
	ErrInputShape = errors.New("input does not fit the model")
	// ErrNonFinite means a distance came out NaN or infinite: an input's
	// values beyond what float32 scoring can hold (a preprocessed tensor
	// with a value of 1e25, say), or a broken model.
	ErrNonFinite = errors.New("score is not finite")
	// ErrInvalidOptions means an Option is out of range or options
	// conflict; Open reports every problem at once.
	ErrInvalidOptions = errors.New("invalid options")
)
