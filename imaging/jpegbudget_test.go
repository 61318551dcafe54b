package imaging

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bicyc/bicyc/internal/jpegbomb"
)

// TestJPEGScanBomb: a progressive 4096x4096 JPEG of 6000 repeated AC scans
// (about 240 KB; Go's image/jpeg alone takes 5 to 30 ms a scan, half a
// minute or more in all) is refused before any pixel is decoded, through
// Go's decoder and through libjpeg-turbo's path alike, in well under a
// second; so is one within the scan count whose scans sum to more passes
// than the budget. One within both budgets decodes.
func TestJPEGScanBomb(t *testing.T) {
	for _, c := range []struct {
		name    string
		encoded []byte
		want    string
	}{
		{"go decoder, 6000 scans", jpegbomb.Progressive(4096, 6000), "6001 scans"},
		{"libjpeg-turbo path, 6000 scans", jpegbomb.Unsupported(4096, 6000), "6001 scans"},
		{"101 scans of a small image", jpegbomb.Progressive(64, MaxJPEGScans), "101 scans"},
		{"40 scans of 16 Mpx", jpegbomb.Progressive(4096, 40), "41 scans cover 687865856 component pixels"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, format, err := DecodeImage(bytes.NewReader(c.encoded), MaxImagePixels)
			took := time.Since(start)
			t.Logf("%d bytes: %v in %v", len(c.encoded), err, took)
			if !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) || format != "jpeg" {
				t.Fatalf("got format %q, error %v; want a jpeg refused for %q, wrapping ErrTooLarge and ErrFormat", format, err, c.want)
			}
			if took > 500*time.Millisecond {
				t.Errorf("refused in %v, want well under a second", took)
			}
		})
	}
	within := jpegbomb.Progressive(512, 60)
	img, _, err := DecodeImage(bytes.NewReader(within), MaxImagePixels)
	if err != nil || img.Bounds().Dx() != 512 {
		t.Fatalf("61 scans of 512x512 (within both budgets): %v", err)
	}
	ref, err := jpeg.Decode(bytes.NewReader(within))
	got, ok1 := img.(*image.Gray)
	want, ok2 := ref.(*image.Gray)
	if err != nil || !ok1 || !ok2 || !bytes.Equal(got.Pix, want.Pix) {
		t.Errorf("decoded differently from image/jpeg (%v)", err)
	}
}

// TestJPEGStructureReadsSegments: the scan walk skips segments whole, so
// an SOS marker inside an APP1 segment (an EXIF thumbnail's) or a byte
// pair 0xFF 0xDA that is stuffed entropy data is not counted.
func TestJPEGStructureReadsSegments(t *testing.T) {
	bomb := jpegbomb.Progressive(64, 3)
	thumbnail := bytes.Repeat([]byte{0xFF, 0xDA, 0x00, 0x08, 1, 1, 0, 1, 63, 0}, 200)
	app1 := append([]byte{0xFF, 0xE1, byte((len(thumbnail) + 2) >> 8), byte(len(thumbnail) + 2)}, thumbnail...)
	withApp := append(append(append([]byte(nil), bomb[:2]...), app1...), bomb[2:]...)
	for name, b := range map[string][]byte{"plain": bomb, "with a thumbnail's markers in APP1": withApp} {
		if w := jpegStructure(b); w.scans != 4 || w.work != 4*64*64 {
			t.Errorf("%s: %+v, want 4 scans of 4096 pixels", name, w)
		}
	}
	real, err := os.ReadFile(filepath.Join("testdata", "sampling", "420-progressive.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	if w := jpegStructure(real); w.scans < 2 || w.scans > 20 {
		t.Errorf("a progressive JPEG from libjpeg: %d scans, want libjpeg's script (2 to 20)", w.scans)
	}
}

// TestDecodeImageContext: a cancelled context stops a decode in progress
// (the error wraps context.Canceled) long before the image would have
// decoded, in Go's decoder and in libjpeg-turbo.
func TestDecodeImageContext(t *testing.T) {
	// 31 scans of 16 Mpx: within the budget, a second or more of work.
	encoded := jpegbomb.Progressive(4096, 30)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	start := time.Now()
	_, _, err := DecodeImageContext(ctx, bytes.NewReader(encoded), MaxImagePixels)
	took := time.Since(start)
	t.Logf("cancelled after 10 ms: %v in %v", err, took)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if jpegTurbo == "" {
		return
	}
	real, err := os.ReadFile(filepath.Join("testdata", "sampling", "asymmetric.jpg"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeJPEGTurbo(context.Background(), real, MaxImagePixels); err != nil {
		t.Fatalf("libjpeg-turbo: %v", err)
	}
	_, _, err = DecodeImageContext(ctx, bytes.NewReader(real), MaxImagePixels)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("DecodeImageContext, cancelled, libjpeg-turbo's image: %v, want context.Canceled", err)
	}
	if _, err := decodeJPEGTurbo(ctx, real, MaxImagePixels); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("libjpeg-turbo with a cancelled context: %v, want stopped by its progress monitor", err)
	}
}
