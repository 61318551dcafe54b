package data

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bicyc/bicyc/bounded"
)

// countingReader serves n bytes of fill (n < 0: without end) and counts
// the bytes read.
type countingReader struct {
	fill byte
	n    int64
	read int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.n >= 0 && r.read >= r.n {
		return 0, io.EOF
	}
	if r.n >= 0 {
		p = p[:min(int64(len(p)), r.n-r.read)]
	}
	for i := range p {
		p[i] = r.fill
	}
	r.read += int64(len(p))
	return len(p), nil
}

// TestDecodeImageEndlessInput decodes an endless stream of zeros, as from
// /dev/zero, and 200 MB of them, as from a pipe: each fails at once as an
// unknown format after reading at most a few kilobytes.
func TestDecodeImageEndlessInput(t *testing.T) {
	for i, n := range []int64{-1, 200 << 20} {
		r := &countingReader{n: n}
		_, _, err := DecodeImage(r, MaxImagePixels)
		if !errors.Is(err, image.ErrFormat) || !errors.Is(err, ErrFormat) {
			t.Errorf("case %d: %v, want an unknown format", i, err)
		}
		if r.read > 64<<10 {
			t.Errorf("case %d: read %d bytes to refuse zeros", i, r.read)
		}
	}
}

// pngWithChunk returns a 1x1 gray PNG with an ancillary chunk of n bytes
// before its pixels, which a decoder must read through.
func pngWithChunk(n int) []byte {
	chunk := func(typ string, payload []byte) []byte {
		body := append([]byte(typ), payload...)
		out := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
		return binary.BigEndian.AppendUint32(append(out, body...), crc32.ChecksumIEEE(body))
	}
	out := []byte("\x89PNG\r\n\x1a\n")
	out = append(out, chunk("IHDR", []byte{0, 0, 0, 1, 0, 0, 0, 1, 8, 0, 0, 0, 0})...)
	out = append(out, chunk("tEXt", append([]byte("k\x00"), make([]byte, n)...))...)
	// zlib of the one filtered row {0, 0}.
	out = append(out, chunk("IDAT", []byte{0x78, 0x9c, 0x62, 0x60, 0x00, 0x04, 0x00, 0x00, 0xff, 0xff, 0x00, 0x02, 0x00, 0x01})...)
	return append(out, chunk("IEND", nil)...)
}

// TestDecodeImageByteLimit checks MaxImageBytes: a 1-pixel image whose
// metadata pushes the stream past the limit for 1 pixel (1 MiB + 8 bytes)
// is refused as too large; the same image with less metadata decodes.
func TestDecodeImageByteLimit(t *testing.T) {
	if _, _, err := DecodeImage(bytes.NewReader(pngWithChunk(1000)), 1); err != nil {
		t.Fatalf("small metadata: %v", err)
	}
	_, _, err := DecodeImage(bytes.NewReader(pngWithChunk(2<<20)), 1)
	if !errors.Is(err, ErrImageTooLarge) || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "longer than 1048584 bytes") {
		t.Fatalf("2 MiB of metadata on one pixel: %v, want ErrImageTooLarge", err)
	}
}

// failingReader returns its first bytes and then err, or panics if err is
// nil.
type failingReader struct {
	first []byte
	err   error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.first) > 0 {
		n := copy(p, r.first)
		r.first = r.first[n:]
		return n, nil
	}
	if r.err == nil {
		panic("reader broke")
	}
	return 0, r.err
}

// TestDecodeImageReaderFailures checks that an error of the reader is
// reported as a read error (not a corrupt image), in the header and in the
// pixels, and that a panic while decoding becomes an error.
func TestDecodeImageReaderFailures(t *testing.T) {
	good := pngWithChunk(10)
	errBroken := errors.New("connection reset")
	cases := []struct {
		first   []byte
		err     error
		message string
	}{
		{good[:5], errBroken, "reading image: connection reset"},
		{good[:60], errBroken, "reading image: connection reset"},
		{good[:60], nil, "decoder failed: reader broke"},
	}
	for i, c := range cases {
		_, _, err := DecodeImage(&failingReader{first: c.first, err: c.err}, MaxImagePixels)
		if err == nil || !strings.Contains(err.Error(), c.message) {
			t.Errorf("case %d: %v, want %q", i, err, c.message)
		}
		if c.err != nil && (!errors.Is(err, c.err) || errors.Is(err, ErrFormat)) {
			t.Errorf("case %d: %v should wrap the reader's error and not ErrFormat", i, err)
		}
	}
}

// specialFiles makes, in dir, a named pipe without a writer, a socket, and
// links to the pipe and to a regular image, all with image names; it
// returns the regular image's path and a function that releases the
// socket.
func specialFiles(t *testing.T, dir string) string {
	t.Helper()
	regular := filepath.Join(dir, "a.png")
	writePNG(t, regular, gradient(5, 4, 1))
	if err := syscall.Mkfifo(filepath.Join(dir, "b.png"), 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	if err := os.Symlink("b.png", filepath.Join(dir, "c.png")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.png", filepath.Join(dir, "d.png")); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "e.png"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return regular
}

// withTimeout fails the test if f does not return within 10 s.
func withTimeout(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s hangs", what)
	}
}

// TestImageFolderSkipsSpecialFiles loads an image folder whose class holds,
// besides two images (a file and a link to it), a named pipe, a link to it
// and a socket: loading never blocks, takes the two images and lists the
// other three in Skipped, each with its kind.
func TestImageFolderSkipsSpecialFiles(t *testing.T) {
	root := t.TempDir()
	class := filepath.Join(root, "shirt")
	if err := os.Mkdir(class, 0o755); err != nil {
		t.Fatal(err)
	}
	regular := specialFiles(t, class)
	var ds *Dataset
	var err error
	withTimeout(t, "LoadImageFolder", func() {
		ds, err = LoadImageFolder(root, Preprocess{Channels: 3, Height: 4, Width: 5})
	})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 2 || !bytes.Equal(ds.Image(0), ds.Image(1)) {
		t.Errorf("%d images, want a.png and its link d.png", ds.Len())
	}
	want := []string{"b.png: not a regular file (named pipe)", "c.png: not a regular file (named pipe)", "e.png: not a regular file (socket)"}
	if len(ds.Skipped) != len(want) {
		t.Fatalf("skipped %q, want %q", ds.Skipped, want)
	}
	for i, w := range want {
		if !strings.HasSuffix(ds.Skipped[i], filepath.Join("shirt", w)) {
			t.Errorf("skipped[%d] = %q, want it to end in %q", i, ds.Skipped[i], w)
		}
	}
	withTimeout(t, "DecodeImageFile on a named pipe", func() {
		_, err = DecodeImageFile(filepath.Join(class, "b.png"))
	})
	if !errors.Is(err, bounded.ErrNotRegular) {
		t.Errorf("DecodeImageFile of a named pipe: %v, want ErrNotRegular", err)
	}
	files, _, _ := ImageFiles(class)
	if !slices.Equal(files, []string{regular, filepath.Join(class, "d.png")}) {
		t.Errorf("ImageFiles: %q", files)
	}
}
