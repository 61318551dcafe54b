// Package imagetest writes the image files and synthetic pictures that the
// tests of the image packages (imaging, data) share.
//
// May import: the standard library only.
package imagetest

import (
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// WritePNG encodes img as PNG into path, creating parent folders.
func WritePNG(t testing.TB, path string, img image.Image) {
	t.Helper()
	writeEncoded(t, path, func(f *os.File) error { return png.Encode(f, img) })
}

// WriteJPEG encodes img as JPEG (quality 90) into path, creating parent
// folders.
func WriteJPEG(t testing.TB, path string, img image.Image) {
	t.Helper()
	writeEncoded(t, path, func(f *os.File) error { return jpeg.Encode(f, img, &jpeg.Options{Quality: 90}) })
}

func writeEncoded(t testing.TB, path string, encode func(*os.File) error) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := encode(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// Gradient returns a w x h RGB image whose colour depends on the position
// and on seed.
func Gradient(w, h, seed int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x*7 + seed), uint8(y*5 + 3*seed), uint8(x*y + seed), 255})
		}
	}
	return img
}
