package train

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBuildOutliersFromOwnImages checks that every outlier image is made of
// the batch's own images only: with every pixel of the batch a distinct
// value, each outlier pixel must be a pixel of the images buildOutliers
// says it read, at a place its kind allows: a patch shuffle is a
// permutation of its image's pixels that is not the image, a heavy crop
// repeats pixels of one image (fewer distinct values), a class mix takes
// each half from one of two images of different classes.
func TestBuildOutliersFromOwnImages(t *testing.T) {
	const n, c, h, w, m = 6, 2, 12, 12, 9
	size := c * h * w
	images := make([]float32, n*size)
	for i := range images {
		images[i] = float32(i) + 0.5
	}
	labels := []int{0, 1, 0, 1, 2, 2}
	owner := func(v float32) int { return int(v) / size } // the image a value belongs to
	dst := make([]float32, m*size)
	src := buildOutliers(rand.New(rand.NewPCG(1, 2)), images, labels, c, h, w, dst)
	if len(src) != m {
		t.Fatalf("%d sources for %d outliers", len(src), m)
	}
	kinds := map[outlierKind]int{}
	for j, s := range src {
		out := dst[j*size : (j+1)*size]
		kinds[s.kind]++
		a := images[s.a*size : (s.a+1)*size]
		for i, v := range out {
			if o := owner(v); v != float32(int(v))+0.5 || o < 0 || o >= n || (o != s.a && o != s.b) {
				t.Fatalf("outlier %d (kind %d) pixel %d is %g, not a pixel of image %d or %d", j, s.kind, i, v, s.a, s.b)
			}
			if ch := (int(v) % size) / (h * w); ch != i/(h*w) {
				t.Fatalf("outlier %d pixel %d comes from channel %d", j, i, ch)
			}
		}
		switch s.kind {
		case patchShuffle:
			sorted := slices.Clone(out)
			slices.Sort(sorted)
			if !slices.Equal(sorted, a) || slices.Equal(out, a) {
				t.Errorf("outlier %d: not a shuffle of image %d's pixels other than the image", j, s.a)
			}
		case heavyCrop:
			distinct := map[float32]bool{}
			for _, v := range out {
				distinct[v] = true
			}
			if len(distinct) > size/4 {
				t.Errorf("outlier %d: %d distinct pixels, want at most a quarter of %d (a crop of at most half of each side)", j, len(distinct), size)
			}
		case classMix:
			if s.b < 0 || labels[s.b] == labels[s.a] {
				t.Fatalf("outlier %d mixes images %d and %d of labels %v", j, s.a, s.b, labels)
			}
			for i, v := range out {
				if v != images[s.a*size+i] && v != images[s.b*size+i] {
					t.Fatalf("outlier %d pixel %d is not the same pixel of image %d or %d", j, i, s.a, s.b)
				}
			}
			fromA := 0
			for i, v := range out {
				if v == images[s.a*size+i] {
					fromA++
				}
			}
			if fromA != size/2 {
				t.Errorf("outlier %d: %d of %d pixels from image %d, want half", j, fromA, size, s.a)
			}
		}
	}
	if kinds[patchShuffle] != 3 || kinds[heavyCrop] != 3 || kinds[classMix] != 3 {
		t.Errorf("kinds %v, want 3 of each", kinds)
	}
}
