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
