package bounded

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

var (
	// ErrTooLarge: an input is longer than its byte limit.
	ErrTooLarge = errors.New("input too large")
	// ErrNotRegular: a path names a named pipe, device, socket or
	// directory where a regular file is required.
	ErrNotRegular = errors.New("not a regular file")
)

// Reader reads at most Limit bytes from an underlying reader. A read that
// would go past the limit returns an error wrapping ErrTooLarge (and sets
// Exceeded) instead of io.EOF, so a stream that is too long is never
// mistaken for a complete one. It is not safe for concurrent use.
type Reader struct {
	r     io.Reader
	limit int64
	left  int64 // bytes still allowed, plus one to detect excess
	// Exceeded is set once the stream went past Limit.
	Exceeded bool
}

// NewReader returns a Reader of at most limit (>= 0) bytes of r.
func NewReader(r io.Reader, limit int64) *Reader {
	if limit < 0 {
		panic(fmt.Sprintf("bounded: NewReader: negative limit %d", limit))
	}
	return &Reader{r: r, limit: limit, left: limit + 1}
}

// Limit returns the byte limit.
func (b *Reader) Limit() int64 { return b.limit }

// Read reads from the underlying reader; see Reader.
func (b *Reader) Read(p []byte) (int, error) {
	if b.Exceeded {
		return 0, b.tooLarge()
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left == 0 {
		// One byte more than allowed arrived: drop it and fail.
		b.Exceeded = true
		return n - 1, b.tooLarge()
	}
	return n, err
}

func (b *Reader) tooLarge() error {
	return fmt.Errorf("more than %d bytes: %w", b.limit, ErrTooLarge)
}

// OpenRegular opens path for reading, following symbolic links, and returns
// the file and its information. It refuses, with an error wrapping
// ErrNotRegular and naming the kind of file (see Kind), anything but a
// regular file. It never blocks: the file is opened non-blocking, which
// makes opening a named pipe without a writer return at once; the
// non-blocking flag has no effect on reading a regular file. The caller
// must close the file.
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		// A socket cannot be opened at all (ENXIO): say what it is.
		if info, serr := os.Stat(path); serr == nil && !info.Mode().IsRegular() {
			return nil, nil, notRegular(path, info)
		}
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(path, info)
	}
	return f, info, nil
}

func notRegular(path string, info fs.FileInfo) error {
	return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, Kind(info.Mode()))}
}

// ReadFile reads the whole regular file at path (OpenRegular) if it holds
// at most limit bytes; a longer file is an error wrapping ErrTooLarge,
// reported without reading past the limit. Errors name the path.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, info, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the limit of %d: %w", path, info.Size(), limit, ErrTooLarge)
	}
	data, err := io.ReadAll(NewReader(f, limit))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// Kind names the type of a file mode for messages: "regular file",
// "directory", "symbolic link", "named pipe", "socket", "device" or
// "irregular file".
func Kind(mode fs.FileMode) string {
	switch t := mode.Type(); {
	case t == 0:
		return "regular file"
	case t&fs.ModeDir != 0:
		return "directory"
	case t&fs.ModeSymlink != 0:
		return "symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "named pipe"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&(fs.ModeDevice|fs.ModeCharDevice) != 0:
		return "device"
	}
	return "irregular file"
}
