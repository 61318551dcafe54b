package train

import (
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/models/ops"
)

// Outlier exposure (loss.outlier_exposure, docs/method.md "Outlier exposure"): each Stage I step
// adds images made from the step's own images that belong to no class of the task, and trains the
// head's outputs on them towards the uniform distribution (Hendrycks et al., ICLR 2019, with the
// outliers made from the task's images instead of an outside data set, which bicyc does not have).

// outlierKind is how one outlier image is made from the batch's images.
type outlierKind int

const (
	// patchShuffle cuts one image into a 4x4 grid of patches and permutes them: the local texture of
	// a known class without its shape.
	patchShuffle outlierKind = iota
	// heavyCrop takes a random crop of a quarter to a half of one image's side, resized back to the
	// full image by nearest neighbour: a detail of a known class seen as a whole.
	heavyCrop
	// classMix puts one half of an image (left or top) beside the other half of an image of another
	// class: a shape of no known class.
	classMix
	outlierKinds = 3
)

// outliersPerStep is the number of outlier images of a step on batch images: half the batch, so
// that the real images stay two thirds or more of the backbone's rows (BatchNorm's batch
// statistics see both, as in Hendrycks et al.'s code) and a step costs at most 1.5 times as much.
func outliersPerStep(batch int) int { return max(1, batch/2) }

// outlierSource records what an outlier image was made of: its kind and the batch images it reads
// (b is -1 except for classMix).
type outlierSource struct {
	kind outlierKind
	a, b int
}

// buildOutliers writes len(dst)/(c*h*w) outlier images into dst (NCHW), made from the n images of
// images (NCHW, normalised as training does) with their task-local labels; outlier j is of kind
// j mod 3, from images drawn with rng. Every value it writes is a pixel of images: the outliers are
// made of the task's own images only. It returns what each outlier was made of.
func buildOutliers(rng *rand.Rand, images []float32, labels []int, c, h, w int, dst []float32) []outlierSource {
	size := c * h * w
	n, m := len(labels), len(dst)/size
	src := make([]outlierSource, m)
	for j := range m {
		out := dst[j*size : (j+1)*size]
		a := rng.IntN(n)
		img := images[a*size : (a+1)*size]
		s := outlierSource{kind: outlierKind(j % outlierKinds), a: a, b: -1}
		switch s.kind {
		case patchShuffle:
			shufflePatches(rng, img, out, c, h, w)
		case heavyCrop:
			cropResize(rng, img, out, c, h, w)
		case classMix:
			s.b = otherClass(rng, labels, a)
			mixHalves(rng.IntN(2) == 0, img, images[s.b*size:(s.b+1)*size], out, c, h, w)
		}
		src[j] = s
	}
	return src
}

// shufflePatches writes src (CHW) into dst with its 4x4 grid of patches permuted (a permutation
// other than the identity); rows and columns beyond the grid (h or w not a multiple of 4) stay.
func shufflePatches(rng *rand.Rand, src, dst []float32, c, h, w int) {
	const grid = 4
	ph, pw := max(1, h/grid), max(1, w/grid)
	gy, gx := h/ph, w/pw
	copy(dst, src)
	if gy*gx < 2 {
		return
	}
	perm := rng.Perm(gy * gx)
	if isIdentity(perm) {
		perm[0], perm[1] = perm[1], perm[0]
	}
	for to, from := range perm {
		ty, tx, fy, fx := to/gx*ph, to%gx*pw, from/gx*ph, from%gx*pw
		for ch := range c {
			for y := range ph {
				d := ch*h*w + (ty+y)*w + tx
				s := ch*h*w + (fy+y)*w + fx
				copy(dst[d:d+pw], src[s:s+pw])
			}
		}
	}
}

func isIdentity(perm []int) bool {
	for i, p := range perm {
		if i != p {
			return false
		}
	}
	return true
}

// cropResize writes into dst a random crop of src (CHW) of a quarter to a half of each side,
// resized to h x w by nearest neighbour.
func cropResize(rng *rand.Rand, src, dst []float32, c, h, w int) {
	ch0 := max(1, h/4) + rng.IntN(max(1, h/2-h/4+1))
	cw0 := max(1, w/4) + rng.IntN(max(1, w/2-w/4+1))
	y0, x0 := rng.IntN(h-ch0+1), rng.IntN(w-cw0+1)
	for ch := range c {
		for y := range h {
			sy := y0 + y*ch0/h
			for x := range w {
				dst[ch*h*w+y*w+x] = src[ch*h*w+sy*w+x0+x*cw0/w]
			}
		}
	}
}

// otherClass draws the index of an image whose label is not labels[a]; when every image has a's
// label, any image other than a.
func otherClass(rng *rand.Rand, labels []int, a int) int {
	var other []int
	for i, y := range labels {
		if y != labels[a] {
			other = append(other, i)
		}
	}
	if len(other) == 0 {
		for i := range labels {
			if i != a {
				other = append(other, i)
			}
		}
	}
	return other[rng.IntN(len(other))]
}

// mixHalves writes into dst the left (vertical) or top half of a beside the other half of b (CHW).
func mixHalves(vertical bool, a, b, dst []float32, c, h, w int) {
	for ch := range c {
		for y := range h {
			for x := range w {
				i := ch*h*w + y*w + x
				first := y < h/2
				if vertical {
					first = x < w/2
				}
				if first {
					dst[i] = a[i]
				} else {
					dst[i] = b[i]
				}
			}
		}
	}
}

// outlierExposure is L_oe on the head's logits [M,K] of the outlier rows: the cross-entropy to
// the uniform distribution over the K outputs (with rotation on task 1, every class and turn),
//
//	L_oe = -(1/M) sum_j (1/K) sum_k log softmax(l_j)_k  >=  log K,
//
// equal to log K exactly when every outlier's outputs are uniform.
func outlierExposure(g *G.ExprGraph, logits *G.Node) (*G.Node, error) {
	m, k := logits.Shape()[0], logits.Shape()[1]
	u := make([]float32, m*k)
	for i := range u {
		u[i] = 1 / float32(k)
	}
	uniform := G.NewMatrix(g, tensor.Float32, G.WithShape(m, k), G.WithName("uniform"),
		G.WithValue(tensor.New(tensor.WithShape(m, k), tensor.WithBacking(u))))
	return ops.CrossEntropy(logits, uniform)
}
