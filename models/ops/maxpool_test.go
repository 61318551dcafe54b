package ops

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestMaxPoolGradient(t *testing.T) {
	cases := []struct {
		shape          []int
		k, stride, pad int
	}{
		{[]int{2, 3, 7, 6}, 3, 2, 1}, // the ImageNet ResNet stem pool, odd and even sides
		{[]int{1, 2, 5, 5}, 3, 1, 1}, // overlapping windows share positions
		{[]int{1, 1, 4, 4}, 2, 2, 0},
	}
	for _, dt := range floatTypes {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%v/case%d", dt, i), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(i), 9))
				checkGrad(t, cost(func(in []*G.Node) (*G.Node, error) { return MaxPool(in[0], c.k, c.stride, c.pad) }),
					[]*tensor.Dense{asDtype(randDense(rng, c.shape...), dt)}, gradTolerance(dt))
			})
		}
	}
}

// naiveMaxPool is the definition of MaxPool written out, padding as -Inf.
func naiveMaxPool(x []float64, n, c, h, w, k, stride, pad int) ([]float64, int, int) {
	oh, ow := (h+2*pad-k)/stride+1, (w+2*pad-k)/stride+1
	y := make([]float64, 0, n*c*oh*ow)
	for p := 0; p < n*c; p++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				best := math.Inf(-1)
				for a := 0; a < k; a++ {
					for b := 0; b < k; b++ {
						r, s := i*stride+a-pad, j*stride+b-pad
						if r >= 0 && r < h && s >= 0 && s < w {
							best = math.Max(best, x[(p*h+r)*w+s])
						}
					}
				}
				y = append(y, best)
			}
		}
	}
	return y, oh, ow
}

// TestMaxPoolMatchesDefinition uses all-negative inputs too: zero padding instead of -Inf would win there.
func TestMaxPoolMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i, c := range []struct {
		shape          []int
		k, stride, pad int
		shift          float64
	}{
		{[]int{2, 2, 9, 8}, 3, 2, 1, 0}, {[]int{1, 3, 6, 7}, 3, 2, 1, -2}, {[]int{1, 1, 5, 5}, 5, 1, 2, -2}, {[]int{2, 1, 6, 6}, 2, 2, 0, 0},
	} {
		x := randDense(rng, c.shape...)
		for j := range x.Float64s() {
			x.Float64s()[j] += c.shift
		}
		want, oh, ow := naiveMaxPool(x.Float64s(), c.shape[0], c.shape[1], c.shape[2], c.shape[3], c.k, c.stride, c.pad)
		got, _, err := evalWithGrads([]*tensor.Dense{x}, tensor.Float64, func(in []*G.Node) (*G.Node, error) {
			return MaxPool(in[0], c.k, c.stride, c.pad)
		})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if len(got) != c.shape[0]*c.shape[1]*oh*ow {
			t.Fatalf("case %d: %d outputs, want %d", i, len(got), len(want))
		}
		for j := range want {
			if got[j] != want[j] {
				t.Fatalf("case %d: output %d is %g, want %g", i, j, got[j], want[j])
			}
		}
	}
}

func TestMaxPoolShapeErrors(t *testing.T) {
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(1, 2, 4, 4), G.WithName("x"))
	flat := G.NewMatrix(g, tensor.Float32, G.WithShape(2, 3), G.WithName("flat"))
	ints := G.NewTensor(g, tensor.Int, 4, G.WithShape(1, 2, 4, 4), G.WithName("ints"))
	for i, c := range []struct {
		x              *G.Node
		k, stride, pad int
	}{
		{x, 3, 2, 2}, {x, 0, 1, 0}, {x, 3, 0, 1}, {x, 6, 1, 0}, {flat, 3, 2, 1}, {ints, 3, 2, 1},
	} {
		if _, err := MaxPool(c.x, c.k, c.stride, c.pad); !errors.Is(err, ErrShape) {
			t.Errorf("case %d: error %v, want ErrShape", i, err)
		}
	}
}

// TestMaxPoolFloat32MatchesDirect checks the branch-free float32 path (maxPoolKFloat32) against the direct
// loop of the float64 path on many geometries and values full of ties, outputs and winning positions. The
// last cases are the stem's 3x3, stride-2, pad-1 pooling on rows wide enough for the assembly kernels
// (vector.MaxPoolWindows3s2 and KeepFirstMax), odd and even.
func TestMaxPoolFloat32MatchesDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range 240 {
		k := 1 + rng.IntN(4)
		stride, pad := 1+rng.IntN(3), rng.IntN(k/2+1)
		h, w := max(k-2*pad, 1)+rng.IntN(9), max(k-2*pad, 1)+rng.IntN(9)
		if i >= 200 {
			k, stride, pad, h, w = 3, 2, 1, 5+rng.IntN(30), 15+i-200
		}
		g := poolGeom{shape: tensor.Shape{2, 3, h, w}, k: k, stride: stride, pad: pad}
		g.oh, g.ow = (h+2*pad-k)/stride+1, (w+2*pad-k)/stride+1
		x32, x64 := make([]float32, g.planes()*g.inPlane()), make([]float64, g.planes()*g.inPlane())
		for j := range x32 {
			x32[j] = float32(rng.IntN(5) - 2) // -2..2: ties everywhere, all-negative windows too
			if rng.IntN(4) == 0 {
				x32[j] = float32(rng.NormFloat64())
			}
			x64[j] = float64(x32[j])
		}
		y32, y64 := make([]float32, g.planes()*g.outPlane()), make([]float64, g.planes()*g.outPlane())
		arg32, arg64 := make([]int32, len(y32)), make([]int32, len(y32))
		maxPoolK(g, x32, y32, arg32)
		maxPoolK(g, x64, y64, arg64)
		for j := range y32 {
			if float64(y32[j]) != y64[j] || arg32[j] != arg64[j] {
				t.Fatalf("case %d, %v k%d s%d p%d, output %d: %v at %d, direct loop %v at %d", i, g.shape, k, stride, pad, j, y32[j], arg32[j], y64[j], arg64[j])
			}
		}
	}
}
