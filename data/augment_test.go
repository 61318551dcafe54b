package data

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bicyc/bicyc/imaging"
)

// numbered returns a c x h x w image whose values are 1, 2, 3, ... (mod
// 256, never 0), so every pixel is distinguishable from padding.
func numbered(c, h, w int) []uint8 {
	img := make([]uint8, c*h*w)
	for i := range img {
		img[i] = uint8(i%255 + 1)
	}
	return img
}

// TestAugmentCropInBounds checks, over many draws, that every output pixel
// is either padding (0) or the source pixel at one common shift within
// [-p, p], and that all shifts and both flips occur.
func TestAugmentCropInBounds(t *testing.T) {
	const c, h, w, pad = 3, 8, 6, 2
	src := numbered(c, h, w)
	dst := make([]uint8, len(src))
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[[3]int]bool{}
	for i := range 2000 {
		Augment{CropPadding: pad, HorizontalFlip: true}.Apply(rng, src, dst, c, h, w)
		found := false
		for dy := -pad; dy <= pad && !found; dy++ {
			for dx := -pad; dx <= pad && !found; dx++ {
				for flip := range 2 {
					if slices.Equal(dst, shiftedReference(src, c, h, w, dx, dy, flip == 1)) {
						seen[[3]int{dx, dy, flip}] = true
						found = true
						break
					}
				}
			}
		}
		if !found {
			t.Fatalf("draw %d: output is no shift within ±%d of the source: %v", i, pad, dst)
		}
	}
	if len(seen) != (2*pad+1)*(2*pad+1)*2 {
		t.Errorf("saw %d of %d shift/flip combinations", len(seen), (2*pad+1)*(2*pad+1)*2)
	}
}

// shiftedReference computes the zero-padded shift and optional flip
// directly from the definition.
func shiftedReference(src []uint8, c, h, w, dx, dy int, flip bool) []uint8 {
	out := make([]uint8, len(src))
	for ch := range c {
		for y := range h {
			for x := range w {
				sx, sy := x+dx, y+dy
				if flip {
					sx = (w - 1 - x) + dx
				}
				if sx >= 0 && sx < w && sy >= 0 && sy < h {
					out[(ch*h+y)*w+x] = src[(ch*h+sy)*w+sx]
				}
			}
		}
	}
	return out
}

func TestAugmentZeroValueCopies(t *testing.T) {
	src := numbered(1, 5, 5)
	dst := make([]uint8, len(src))
	Augment{}.Apply(rand.New(rand.NewPCG(0, 0)), src, dst, 1, 5, 5)
	if !slices.Equal(src, dst) || (Augment{}).Enabled() {
		t.Fatalf("zero Augment changed the image: %v", dst)
	}
}

func TestFlipHorizontal(t *testing.T) {
	for i, shape := range [][3]int{{1, 1, 1}, {1, 2, 3}, {3, 4, 5}, {2, 3, 4}} {
		c, h, w := shape[0], shape[1], shape[2]
		src := numbered(c, h, w)
		once := make([]uint8, len(src))
		imaging.FlipHorizontal(src, once, c, h, w)
		if !slices.Equal(once, shiftedReference(src, c, h, w, 0, 0, true)) {
			t.Errorf("case %d: flip %v", i, once)
		}
		twice := make([]uint8, len(src))
		imaging.FlipHorizontal(once, twice, c, h, w)
		if !slices.Equal(twice, src) {
			t.Errorf("case %d: flip twice is not the identity", i)
		}
		inPlace := slices.Clone(src)
		imaging.FlipHorizontal(inPlace, inPlace, c, h, w)
		if !slices.Equal(inPlace, once) {
			t.Errorf("case %d: in-place flip %v, want %v", i, inPlace, once)
		}
		// A preprocessed (float32) image flips the same way.
		floats, flipped := make([]float32, len(src)), make([]float32, len(src))
		for j, v := range src {
			floats[j] = float32(v) / 7
		}
		imaging.FlipHorizontal(floats, flipped, c, h, w)
		for j, v := range once {
			if flipped[j] != float32(v)/7 {
				t.Fatalf("case %d: float32 flip %v, want the uint8 flip %v / 7", i, flipped, once)
			}
		}
	}
}

func TestRotate90(t *testing.T) {
	// 2x2: [a b; c d] turned counter-clockwise is [b d; a c].
	src := []uint8{1, 2, 3, 4}
	for i, c := range []struct {
		k    int
		want []uint8
	}{{0, []uint8{1, 2, 3, 4}}, {1, []uint8{2, 4, 1, 3}}, {2, []uint8{4, 3, 2, 1}}, {3, []uint8{3, 1, 4, 2}}, {-1, []uint8{3, 1, 4, 2}}, {5, []uint8{2, 4, 1, 3}}} {
		dst := make([]uint8, 4)
		Rotate90(src, dst, 1, 2, 2, c.k)
		if !slices.Equal(dst, c.want) {
			t.Errorf("case %d: k=%d gives %v, want %v", i, c.k, dst, c.want)
		}
	}
	img := numbered(3, 7, 7)
	cur := slices.Clone(img)
	next := make([]uint8, len(img))
	for turn := range 4 {
		Rotate90(cur, next, 3, 7, 7, 1)
		cur, next = next, cur
		if identical := slices.Equal(cur, img); identical != (turn == 3) {
			t.Errorf("after %d quarter turns identical = %v", turn+1, identical)
		}
	}
	Rotate90(img, next, 3, 7, 7, 1)
	Rotate90(next, cur, 3, 7, 7, 3)
	if !slices.Equal(cur, img) {
		t.Error("k=1 then k=3 is not the identity")
	}
	defer func() {
		if recover() == nil {
			t.Error("Rotate90 of a non-square image did not panic")
		}
	}()
	Rotate90(make([]uint8, 6), make([]uint8, 6), 1, 2, 3, 1)
}

// BenchmarkAugmentApply measures crop+flip of one CIFAR-sized image.
func BenchmarkAugmentApply(b *testing.B) {
	src := numbered(3, 32, 32)
	dst := make([]uint8, len(src))
	rng := rand.New(rand.NewPCG(1, 1))
	a := Augment{CropPadding: 4, HorizontalFlip: true}
	for b.Loop() {
		a.Apply(rng, src, dst, 3, 32, 32)
	}
}
