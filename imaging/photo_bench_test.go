package imaging

import (
	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/internal/imagetest"

	"bytes"
	"fmt"
	"image/jpeg"
	"testing"
)

// BenchmarkPixelsPhoto preprocesses a 640x480 RGB photo to a 224x224
// network input: squashed, and center-cropped from its 341x256 resize.
func BenchmarkPixelsPhoto(b *testing.B) {
	photo := imagetest.Gradient(640, 480, 1)
	for _, p := range []Preprocess{
		{Channels: 3, Height: 224, Width: 224, ResizeMode: arch.Squash},
		{Channels: 3, Height: 224, Width: 224, ResizeMode: arch.CenterCrop, ResizeShorter: 256},
	} {
		b.Run(string(p.ResizeMode), func(b *testing.B) {
			for range b.N {
				p.Pixels(photo)
			}
		})
	}
}

// BenchmarkPixelsOrientedPhoto preprocesses a decoded 4000x3000 JPEG (12
// Mpx, a phone's photo) to a center-cropped 224x224 input as stored
// (orientation 1), turned 90 degrees (6, a portrait photo) and 180
// degrees (3): the cost of reading the stored pixels through the EXIF view.
func BenchmarkPixelsOrientedPhoto(b *testing.B) {
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, imagetest.Gradient(4000, 3000, 1), &jpeg.Options{Quality: 90}); err != nil {
		b.Fatal(err)
	}
	decoded, err := jpeg.Decode(&buf)
	if err != nil {
		b.Fatal(err)
	}
	p := Preprocess{Channels: 3, Height: 224, Width: 224, ResizeMode: arch.CenterCrop, ResizeShorter: 256}
	for _, o := range []int{1, 6, 3} {
		b.Run(fmt.Sprintf("orientation-%d", o), func(b *testing.B) {
			img := orient(decoded, o)
			for range b.N {
				p.Pixels(img)
			}
		})
	}
}
