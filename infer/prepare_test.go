package infer

import (
	"bytes"
	"context"
	"errors"
	"image/jpeg"
	"image/png"
	"reflect"
	"testing"

	"github.com/bicyc/bicyc/imaging"
)

// TestDecodePrepare checks the one decode path on real Fashion-MNIST
// images: a PNG and a JPEG come back as their format and as exactly the
// input Prepare makes of the image imaging decodes; data that is no image
// wraps imaging.ErrFormat, a header over the pixel limit
// imaging.ErrTooLarge, and a cancelled context stops the decode.
func TestDecodePrepare(t *testing.T) {
	f := loadFixture(t)
	c := openCPU(t, f.twoTasks)
	img := fashionImage(f.test, 3)
	var pngBytes, jpegBytes bytes.Buffer
	if err := png.Encode(&pngBytes, img); err != nil {
		t.Fatal(err)
	}
	if err := jpeg.Encode(&jpegBytes, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	for _, enc := range []struct {
		format string
		data   []byte
	}{{"png", pngBytes.Bytes()}, {"jpeg", jpegBytes.Bytes()}} {
		in, format, err := c.DecodePrepare(context.Background(), bytes.NewReader(enc.data))
		if err != nil || format != enc.format {
			t.Fatalf("%s: format %q, %v", enc.format, format, err)
		}
		decoded, _, err := imaging.DecodeImage(bytes.NewReader(enc.data), DefaultMaxPixels)
		if err != nil {
			t.Fatal(err)
		}
		want, err := c.Prepare(decoded)
		if err != nil || !reflect.DeepEqual(in, want) {
			t.Errorf("%s: DecodePrepare differs from Prepare of the decoded image (%v)", enc.format, err)
		}
	}
	if _, _, err := c.DecodePrepare(context.Background(), bytes.NewReader([]byte("not an image"))); !errors.Is(err, imaging.ErrFormat) {
		t.Errorf("text: %v, want imaging.ErrFormat", err)
	}
	huge := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x01\x86\xa0\x00\x01\x86\xa0\x08\x02\x00\x00\x00\x27\x30\x9c\x9f")
	if _, _, err := c.DecodePrepare(context.Background(), bytes.NewReader(huge)); !errors.Is(err, imaging.ErrTooLarge) {
		t.Errorf("100000x100000 header: %v, want imaging.ErrTooLarge", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := c.DecodePrepare(ctx, bytes.NewReader(pngBytes.Bytes())); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// TestClassifyRunsSplits checks ClassifyRuns' runs: none for no images,
// one of n up to RunBatch, and for more even runs of RunBatch/2 to
// RunBatch covering lo to hi in order; a prepare error stops it.
func TestClassifyRunsSplits(t *testing.T) {
	for _, n := range []int{0, 1, RunBatch, RunBatch + 1, 3*RunBatch - 1} {
		var spans [][2]int
		res, err := ClassifyRuns(context.Background(), n, func(lo, hi int) ([]Input, error) {
			spans = append(spans, [2]int{lo, hi})
			return make([]Input, hi-lo), nil
		}, func(_ context.Context, in []Input) ([]Result, error) { return make([]Result, len(in)), nil })
		if err != nil || len(res) != n {
			t.Fatalf("n=%d: %d results, %v", n, len(res), err)
		}
		next := 0
		for _, s := range spans {
			size := s[1] - s[0]
			if s[0] != next || size > RunBatch || (n > RunBatch && size < RunBatch/2) {
				t.Errorf("n=%d: runs %v", n, spans)
				break
			}
			next = s[1]
		}
		if next != n {
			t.Errorf("n=%d: runs %v cover %d images", n, spans, next)
		}
	}
	boom := errors.New("boom")
	if _, err := ClassifyRuns(context.Background(), 3, func(int, int) ([]Input, error) { return nil, boom },
		func(context.Context, []Input) ([]Result, error) { return nil, nil }); !errors.Is(err, boom) {
		t.Errorf("prepare error: %v", err)
	}
}
