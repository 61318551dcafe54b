package ops

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestReLUGradient(t *testing.T) {
	for _, dt := range floatTypes {
		for i, shape := range [][]int{{2, 3, 4, 5}, {7, 3}, {11}} {
			t.Run(fmt.Sprintf("%v/case%d", dt, i), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(i), 8))
				checkGrad(t, cost(func(in []*G.Node) (*G.Node, error) { return ReLU(in[0]) }),
					[]*tensor.Dense{asDtype(randDense(rng, shape...), dt)}, gradTolerance(dt))
			})
		}
	}
}

// TestReLUMatchesStock uses random inputs, which are never exactly 0: there gorgonia's Rectify passes the
// gradient and ReLU does not (see TestReLUAtZero).
func TestReLUMatchesStock(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	x := randDense(rng, 4, 3, 9, 9)
	for _, dt := range floatTypes {
		t.Run(dt.String(), func(t *testing.T) {
			compareWithStock(t, []*tensor.Dense{x}, dt, 0, func(in []*G.Node) (*G.Node, error) {
				return ReLU(in[0])
			}, func(in []*G.Node) (*G.Node, error) { return G.Rectify(in[0]) })
		})
	}
}

func TestReLUAtZero(t *testing.T) {
	x := tensor.New(tensor.WithShape(4), tensor.WithBacking([]float64{-1, 0, 2, 0}))
	out, grads, err := evalWithGrads([]*tensor.Dense{x}, tensor.Float32, func(in []*G.Node) (*G.Node, error) { return ReLU(in[0]) })
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "output", out, []float64{0, 0, 2, 0}, 0)
	for i, g := range grads[0] {
		if (g != 0) != (i == 2) {
			t.Errorf("gradient %d = %g, want nonzero only at the positive input", i, g)
		}
	}
	g := G.NewGraph()
	if _, err := ReLU(G.NewVector(g, tensor.Int, G.WithShape(3), G.WithName("ints"))); !errors.Is(err, ErrShape) {
		t.Errorf("int input: error %v, want ErrShape", err)
	}
}
