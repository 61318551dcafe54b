package data

import (
	"image"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/internal/imagetest"
)

// TestPixelsGrayPNGMatchesDataset writes Fashion-MNIST images as 28x28 gray
// PNGs; decoding and Pixels must give back exactly the dataset's pixels,
// so inference on a PNG sees what training saw.
func TestPixelsGrayPNGMatchesDataset(t *testing.T) {
	_, test := loadFashionMNIST(t)
	gray := imaging.Preprocess{Channels: 1, Height: 28, Width: 28}
	rgb := imaging.Preprocess{Channels: 3, Height: 28, Width: 28}
	dir := t.TempDir()
	for _, i := range []int{0, 1, 4321, 9999} {
		img := &image.Gray{Pix: slices.Clone(test.Image(i)), Stride: 28, Rect: image.Rect(0, 0, 28, 28)}
		path := filepath.Join(dir, "x.png")
		imagetest.WritePNG(t, path, img)
		decoded, err := imaging.DecodeImageFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := gray.Pixels(decoded); !slices.Equal(got, test.Image(i)) {
			t.Errorf("image %d: gray pixels differ from the dataset", i)
		}
		got := rgb.Pixels(decoded)
		for c := range 3 {
			if !slices.Equal(got[c*784:(c+1)*784], test.Image(i)) {
				t.Errorf("image %d: RGB channel %d differs from the gray dataset image", i, c)
			}
		}
	}
}

// TestDefaultNormalization checks that every dataset kind has a
// normalisation of 1 or 3 channels that makes a valid Preprocess, and an
// unknown kind none.
func TestDefaultNormalization(t *testing.T) {
	for i, kind := range []string{KindFashionMNIST, KindMNIST, KindCIFAR10, KindCIFAR100, KindImageFolder} {
		mean, std := DefaultNormalization(kind)
		channels := len(mean)
		p := imaging.Preprocess{Channels: channels, Height: 32, Width: 32, Mean: mean, Std: std, Resize: imaging.ResizeCatmullRom}
		if err := p.Validate(); err != nil || len(std) != channels || (channels != 1 && channels != 3) {
			t.Errorf("case %d (%s): %+v %v", i, kind, p, err)
		}
	}
	if m, s := DefaultNormalization("svhn"); m != nil || s != nil {
		t.Errorf("unknown kind: %v %v", m, s)
	}
}

// kindPreprocess is the test-time preprocessing of images of a dataset
// kind at c x h x w: its default normalisation, Catmull-Rom resize.
func kindPreprocess(kind string, c, h, w int) imaging.Preprocess {
	mean, std := DefaultNormalization(kind)
	return imaging.Preprocess{Channels: c, Height: h, Width: w, Mean: mean, Std: std, Resize: imaging.ResizeCatmullRom}
}
