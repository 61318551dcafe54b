package imaging

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"io"
	"strings"
	"testing"
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
	if !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "longer than 1048584 bytes") {
		t.Fatalf("2 MiB of metadata on one pixel: %v, want ErrTooLarge", err)
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
