package data

import (
	"fmt"
	"math/rand/v2"

	"github.com/bicyc/bicyc/imaging"
)

// Augment is the training-time augmentation of uint8 CHW images, applied
// before normalisation (docs/method.md, "Augmentation": random crop 32
// with padding 4, horizontal flip, TrivialAugmentWide). The zero value
// copies images unchanged.
type Augment struct {
	// CropPadding p > 0 pads the image with p zero pixels on every side
	// and crops a random window of the original size, that is, shifts the
	// image by (dx, dy) drawn uniformly from [-p, p]^2 and fills the
	// uncovered border with 0. As torchvision's RandomCrop(size, padding=p)
	// on uint8 images, before normalisation.
	CropPadding int `json:"crop_padding"`
	// ResizedCrop, when enabled, is random-resized-crop (see ResizedCrop):
	// the first step, in place of CropPadding (which must then be 0), as in
	// torchvision's ImageNet recipe (RandomResizedCrop,
	// RandomHorizontalFlip). ApplyPhoto crops from an image of any size.
	ResizedCrop ResizedCrop `json:"resized_crop"`
	// HorizontalFlip mirrors the image left-right with probability 1/2.
	HorizontalFlip bool `json:"horizontal_flip"`
	// TrivialAugment applies TrivialAugmentWide (see that function) after
	// the crop and the flip, in the order of torchvision's CIFAR recipe
	// (RandomCrop, RandomHorizontalFlip, TrivialAugmentWide, ToTensor,
	// Normalize). It needs 1 or 3 channels.
	TrivialAugment bool `json:"trivial_augment"`
}

// Enabled reports whether Apply does anything but copy.
func (a Augment) Enabled() bool {
	return a.CropPadding > 0 || a.ResizedCrop.Enabled() || a.HorizontalFlip || a.TrivialAugment
}

// Apply writes an augmented copy of the CHW image src (c x h x w uint8) to
// dst, drawing its randomness from rng: first the crop offsets (x, then y)
// when CropPadding > 0, or the resized crop's window when ResizedCrop is
// enabled, then the flip when HorizontalFlip is set, then
// TrivialAugmentWide's operation, bin and sign when TrivialAugment is set.
// src and dst must not overlap. It panics if a slice is shorter than c*h*w,
// CropPadding is negative or set together with ResizedCrop, or
// TrivialAugment or ResizedCrop is set and c is not 1 or 3.
func (a Augment) Apply(rng *rand.Rand, src, dst []uint8, c, h, w int) {
	a.ApplyPhoto(rng, src, h, w, dst, c, h, w)
}

// ApplyPhoto is Apply from a source image of another size, c x sh x sw:
// the resized crop (which must be enabled unless the sizes are equal)
// brings it to c x h x w.
func (a Augment) ApplyPhoto(rng *rand.Rand, src []uint8, sh, sw int, dst []uint8, c, h, w int) {
	checkImage("Augment.Apply", src, src, c, sh, sw)
	checkImage("Augment.Apply", dst, dst, c, h, w)
	switch {
	case a.CropPadding < 0:
		panic(fmt.Sprintf("data: Augment.Apply: negative crop padding %d", a.CropPadding))
	case a.CropPadding > 0 && a.ResizedCrop.Enabled():
		panic("data: Augment.Apply: crop padding and resized crop are exclusive")
	case a.TrivialAugment && c != 1 && c != 3:
		panic(fmt.Sprintf("data: Augment.Apply: TrivialAugment needs 1 or 3 channels, got %d", c))
	case !a.ResizedCrop.Enabled() && (sh != h || sw != w):
		panic(fmt.Sprintf("data: Augment.Apply: a %dx%d source for a %dx%d image needs the resized crop", sw, sh, w, h))
	}
	if a.ResizedCrop.Enabled() {
		a.ResizedCrop.Apply(rng, src, c, sh, sw, dst, h, w)
	} else {
		dx, dy := 0, 0
		if a.CropPadding > 0 {
			dx = rng.IntN(2*a.CropPadding+1) - a.CropPadding
			dy = rng.IntN(2*a.CropPadding+1) - a.CropPadding
		}
		shift(src, dst, c, h, w, dx, dy)
	}
	if a.HorizontalFlip && rng.IntN(2) == 1 {
		imaging.FlipHorizontal(dst, dst, c, h, w)
	}
	if a.TrivialAugment {
		TrivialAugmentWide(rng, dst, dst, c, h, w)
	}
}

// shift writes dst[ch][y][x] = src[ch][y+dy][x+dx], or 0 where that falls
// outside src: the crop at offset (p+dx, p+dy) of the zero-padded image.
func shift(src, dst []uint8, c, h, w, dx, dy int) {
	// Columns of dst whose source column is inside the image.
	x0, x1 := max(0, -dx), min(w, w-dx)
	for ch := range c {
		for y := range h {
			row := dst[(ch*h+y)*w : (ch*h+y+1)*w]
			sy := y + dy
			if sy < 0 || sy >= h || x0 >= x1 {
				clear(row)
				continue
			}
			srow := src[(ch*h+sy)*w : (ch*h+sy+1)*w]
			clear(row[:x0])
			copy(row[x0:x1], srow[x0+dx:x1+dx])
			clear(row[x1:])
		}
	}
}

// Rotate90 writes the CHW image src (c x h x w, square: h == w) turned by k
// quarter turns counter-clockwise to dst, as torch.rot90(x, k, dims=(1, 2)):
// for k = 1, dst[ch][y][x] = src[ch][x][w-1-y]. k may be any integer (taken
// mod 4; negative turns clockwise). It is the rotation of the task-1
// rotation self-supervision (docs/method.md, "Task 1"). src and dst must not
// overlap. It panics if h != w or a slice is shorter than c*h*w.
func Rotate90(src, dst []uint8, c, h, w, k int) {
	checkImage("Rotate90", src, dst, c, h, w)
	if h != w {
		panic(fmt.Sprintf("data: Rotate90: image is %dx%d, rotation needs a square image", h, w))
	}
	n := w
	for ch := range c {
		s, d := src[ch*n*n:(ch+1)*n*n], dst[ch*n*n:(ch+1)*n*n]
		switch ((k % 4) + 4) % 4 {
		case 0:
			copy(d, s)
		case 1:
			for y := range n {
				for x := range n {
					d[y*n+x] = s[x*n+n-1-y]
				}
			}
		case 2:
			for y := range n {
				for x := range n {
					d[y*n+x] = s[(n-1-y)*n+n-1-x]
				}
			}
		case 3:
			for y := range n {
				for x := range n {
					d[y*n+x] = s[(n-1-x)*n+y]
				}
			}
		}
	}
}

// checkImage panics unless src and dst hold a c x h x w image.
func checkImage[T uint8 | float32](fn string, src, dst []T, c, h, w int) {
	if c < 0 || h < 0 || w < 0 || len(src) < c*h*w || len(dst) < c*h*w {
		panic(fmt.Sprintf("data: %s: image %dx%dx%d needs %d values, src has %d, dst %d", fn, c, h, w, c*h*w, len(src), len(dst)))
	}
}
