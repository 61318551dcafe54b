package infer

import (
	"errors"

	"github.com/bicyc/bicyc/bounded"
)

// Sentinels of outside input that callers branch on (errors.Is): each
// error infer returns about an image, an input or the options wraps one of
// them, with the image's index or file named in the message. An error
// about an image's data wraps package imaging's sentinels instead
// (imaging.ErrFormat, imaging.ErrUnsupported, imaging.ErrTooLarge), which
// have no second name here.
// A call stopped by its context wraps the context's error
// (context.Canceled, context.DeadlineExceeded) instead.
var (
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
	// ErrShortlist means the model's shortlist.onnx does not shortlist
	// its own classes (a file from another model, checksums recomputed):
	// Open replays a cheap form of the manifest's shortlist check.
	ErrShortlist = errors.New("shortlist does not fit the model's classes")
)
