package imaging_test

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/imaging"
)

func ExamplePreprocess_Image() {
	mean, std := data.DefaultNormalization(data.KindFashionMNIST)
	p := imaging.Preprocess{Channels: 1, Height: 28, Width: 28, Mean: mean, Std: std, Resize: imaging.ResizeCatmullRom}
	if err := p.Validate(); err != nil {
		panic(err)
	}
	// A 56x56 half-transparent white square: composited onto the black
	// background, resized to 28x28 with Catmull-Rom, converted to luma,
	// normalised with Fashion-MNIST's mean and std.
	img := image.NewNRGBA(image.Rect(0, 0, 56, 56))
	for y := range 56 {
		for x := range 56 {
			img.SetNRGBA(x, y, color.NRGBA{255, 255, 255, 128})
		}
	}
	x := p.Image(img)
	fmt.Printf("%d values (NCHW 1x1x28x28), pixel %d of 255 -> %.4f\n", len(x), p.Pixels(img)[0], x[0])
	// Output:
	// 784 values (NCHW 1x1x28x28), pixel 128 of 255 -> 0.6118
}

func ExampleDecodeImage() {
	// A PNG header declaring 100000x100000 pixels: refused before decoding.
	header := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x01\x86\xa0\x00\x01\x86\xa0\x08\x02\x00\x00\x00\x27\x30\x9c\x9f")
	_, _, err := imaging.DecodeImage(bytes.NewReader(header), imaging.MaxImagePixels)
	fmt.Println(errors.Is(err, imaging.ErrTooLarge))
	fmt.Println(err)
	// Output:
	// true
	// png header declares 100000x100000 = 10000000000 pixels, more than the limit of 16777216: image too large
}
