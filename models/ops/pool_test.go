package ops

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bicyc/bicyc/models/ops/internal/vector"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestPoolGradient(t *testing.T) {
	cases := []struct {
		name  string
		shape []int
		pool  func(*G.Node) (*G.Node, error)
	}{
		{"maxpool", []int{2, 3, 4, 6}, MaxPool2},
		{"maxpool", []int{1, 2, 2, 2}, MaxPool2},
		{"avgpool", []int{2, 3, 4, 5}, GlobalAvgPool},
		{"avgpool", []int{3, 2, 1, 1}, GlobalAvgPool},
	}
	for _, dt := range floatTypes {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%v/case%d/%s", dt, i, c.name), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(i), 5))
				checkGrad(t, cost(func(in []*G.Node) (*G.Node, error) { return c.pool(in[0]) }),
					[]*tensor.Dense{asDtype(randDense(rng, c.shape...), dt)}, gradTolerance(dt))
			})
		}
	}
}

// TestMaxPool2MatchesStock uses real images, whose many equal (zero) pixels check that ties send the gradient
// to the same window position as gorgonia's MaxPool2D.
func TestMaxPool2MatchesStock(t *testing.T) {
	images := fashionBatch(t, 16)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dt := range floatTypes {
		for i, x := range []*tensor.Dense{images, randDense(rng, 2, 3, 6, 8)} {
			t.Run(fmt.Sprintf("%v/case%d", dt, i), func(t *testing.T) {
				compareWithStock(t, []*tensor.Dense{x}, dt, 0, func(in []*G.Node) (*G.Node, error) {
					return MaxPool2(in[0])
				}, func(in []*G.Node) (*G.Node, error) {
					return G.MaxPool2D(in[0], tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2})
				})
			})
		}
	}
}

// TestGlobalAvgPoolMatchesStock compares with a mean over axis 3 then axis 2. gorgonia v0.9.18's one-step
// G.Mean(x, 2, 3) (and G.Sum(x, 2, 3)) cannot serve as the reference: it failed this comparison, with wrong
// outputs for x [3,5,7,6] and wrong gradients for x [2,3,4,4].
func TestGlobalAvgPoolMatchesStock(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 7))
	for _, dt := range floatTypes {
		for i, x := range []*tensor.Dense{fashionBatch(t, 4), randDense(rng, 3, 5, 7, 6)} {
			t.Run(fmt.Sprintf("%v/case%d", dt, i), func(t *testing.T) {
				tol := 1e-12
				if dt == tensor.Float32 {
					tol = 1e-6
				}
				compareWithStock(t, []*tensor.Dense{x}, dt, tol, func(in []*G.Node) (*G.Node, error) {
					return GlobalAvgPool(in[0])
				}, func(in []*G.Node) (*G.Node, error) {
					m, err := G.Mean(in[0], 3)
					if err != nil {
						return nil, err
					}
					return G.Mean(m, 2)
				})
			})
		}
	}
}

func TestPoolShapeErrors(t *testing.T) {
	g := G.NewGraph()
	odd := G.NewTensor(g, tensor.Float32, 4, G.WithShape(2, 3, 5, 4), G.WithName("odd"))
	flat := G.NewMatrix(g, tensor.Float32, G.WithShape(2, 3), G.WithName("flat"))
	ints := G.NewTensor(g, tensor.Int, 4, G.WithShape(2, 3, 4, 4), G.WithName("ints"))
	for i, c := range []struct {
		pool func(*G.Node) (*G.Node, error)
		x    *G.Node
	}{
		{MaxPool2, odd}, {MaxPool2, flat}, {MaxPool2, ints}, {GlobalAvgPool, flat}, {GlobalAvgPool, ints},
	} {
		if _, err := c.pool(c.x); !errors.Is(err, ErrShape) {
			t.Errorf("case %d: error %v, want ErrShape", i, err)
		}
	}
}

func TestOrderedKeyKeepsOrder(t *testing.T) {
	ascending := []float32{float32(math.Inf(-1)), -math.MaxFloat32, -3, -1e-40, float32(math.Copysign(0, -1)), 0, 1e-45, 1e-40, 2, math.MaxFloat32, float32(math.Inf(1))}
	for i := 1; i < len(ascending); i++ {
		if a, b := orderedKey(ascending[i-1]), orderedKey(ascending[i]); a >= b {
			t.Errorf("case %d: key(%g) = %d, not below key(%g) = %d", i, ascending[i-1], a, ascending[i], b)
		}
	}
}

// TestMaxPool2KernelsMatchScalar checks the float32 paths that use the assembly kernels against the scalar
// ones on widths below, at and above the kernels' four-window minimum and values full of ties, signed zeros,
// infinities and NaNs: the forward pass bit for bit against maxPoolRowPairScalar, the gradient against the
// float64 path given the same argmax.
func TestMaxPool2KernelsMatchScalar(t *testing.T) {
	if !vector.HasAVX2 {
		t.Skip("no AVX2 and FMA")
	}
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -2, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), -float32(math.NaN())}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, w := range []int{2, 4, 6, 8, 14, 16, 18, 28, 30} {
		const planes, h = 3, 4
		x := make([]float32, planes*h*w)
		for i := range x {
			if x[i] = float32(rng.NormFloat64()); rng.IntN(2) == 0 {
				x[i] = special[rng.IntN(len(special))]
			}
		}
		n := len(x) / 4
		y, argmax := make([]float32, n), make([]uint8, n)
		maxPool2(x, y, argmax, h, w)
		wantY, wantArg := make([]float32, n), make([]uint8, n)
		for r := range planes * h / 2 {
			ow := w / 2
			maxPoolRowPairScalar(x[2*r*w:(2*r+1)*w], x[(2*r+1)*w:(2*r+2)*w], wantY[r*ow:(r+1)*ow], wantArg[r*ow:(r+1)*ow])
		}
		for j := range y {
			if math.Float32bits(y[j]) != math.Float32bits(wantY[j]) || argmax[j] != wantArg[j] {
				t.Fatalf("width %d, window %d: %v at %d, scalar path %v at %d", w, j, y[j], argmax[j], wantY[j], wantArg[j])
			}
		}
		dy := make([]float32, n)
		dy64 := make([]float64, n)
		for j := range dy {
			dy[j] = special[rng.IntN(len(special)-2)] + float32(rng.NormFloat64())
			dy64[j] = float64(dy[j])
		}
		dx := make([]float32, len(x))
		for i := range dx {
			dx[i] = float32(math.NaN()) // stale values: every element must be written
		}
		dx64 := make([]float64, len(x))
		maxPool2Grad(dy, dx, argmax, h, w)
		maxPool2Grad(dy64, dx64, argmax, h, w)
		for i := range dx {
			if float64(dx[i]) != dx64[i] || math.Signbit(float64(dx[i])) != math.Signbit(dx64[i]) {
				t.Fatalf("width %d: gradient %d is %v, float64 path %v", w, i, dx[i], dx64[i])
			}
		}
	}
}
