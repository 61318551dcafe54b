package imaging

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeJPEGOrientation decodes fuzzed bytes, seeded with Pillow's
// JPEGs of every EXIF orientation. Invariants: jpegOrientation gives 1-8;
// a decoded JPEG has the stored size from image/jpeg, width and height
// swapped for orientations 5-8, and its top-left pixel is the stored
// corner the EXIF standard puts there.
func FuzzDecodeJPEGOrientation(f *testing.F) {
	for o := 1; o <= 8; o++ {
		b, err := os.ReadFile(filepath.Join("testdata", "exif", fmt.Sprintf("orient-%d.jpg", o)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o := jpegOrientation(b)
		if o < 1 || o > 8 {
			t.Fatalf("orientation %d", o)
		}
		img, format, err := DecodeImage(bytes.NewReader(b), 1<<16)
		if err != nil || format != "jpeg" {
			return
		}
		stored, err := jpeg.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("DecodeImage decoded a JPEG that image/jpeg refuses: %v", err)
		}
		sb := stored.Bounds()
		w, h := sb.Dx(), sb.Dy()
		if o >= 5 {
			w, h = h, w
		}
		if img.Bounds() != image.Rect(0, 0, w, h) {
			t.Fatalf("orientation %d: bounds %v, stored %v", o, img.Bounds(), sb)
		}
		corner := map[int]image.Point{
			1: {sb.Min.X, sb.Min.Y}, 2: {sb.Max.X - 1, sb.Min.Y}, 3: {sb.Max.X - 1, sb.Max.Y - 1}, 4: {sb.Min.X, sb.Max.Y - 1},
			5: {sb.Min.X, sb.Min.Y}, 6: {sb.Min.X, sb.Max.Y - 1}, 7: {sb.Max.X - 1, sb.Max.Y - 1}, 8: {sb.Max.X - 1, sb.Min.Y},
		}[o]
		if got, want := color.RGBA64Model.Convert(img.At(0, 0)), color.RGBA64Model.Convert(stored.At(corner.X, corner.Y)); got != want {
			t.Fatalf("orientation %d: top-left %v, stored corner %v is %v", o, got, corner, want)
		}
	})
}
