package ops

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestAddMatchesStock(t *testing.T) {
	for _, dt := range floatTypes {
		for i, shape := range [][]int{{3}, {2, 3, 5, 5}, {4, 64, 8, 8}} {
			t.Run(fmt.Sprintf("%v/case%d", dt, i), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(i), 31))
				inputs := []*tensor.Dense{randDense(rng, shape...), randDense(rng, shape...)}
				compareWithStock(t, inputs, dt, 0, func(in []*G.Node) (*G.Node, error) {
					return Add(in[0], in[1])
				}, func(in []*G.Node) (*G.Node, error) {
					return G.Add(in[0], in[1])
				})
			})
		}
	}
}

// TestAddReLUMatchesAddThenReLU checks the fused op against the two ops it replaces, exactly, on inputs whose
// sums are never exactly 0 (random values), with a tensor larger than one block of the fused loop.
func TestAddReLUMatchesAddThenReLU(t *testing.T) {
	for _, dt := range floatTypes {
		for i, shape := range [][]int{{5}, {2, 3, 5, 5}, {4, 64, 8, 8}, {3, 64, 16, 16}} {
			t.Run(fmt.Sprintf("%v/case%d", dt, i), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(i), 37))
				inputs := []*tensor.Dense{randDense(rng, shape...), randDense(rng, shape...)}
				compareWithStock(t, inputs, dt, 0, func(in []*G.Node) (*G.Node, error) {
					return AddReLU(in[0], in[1])
				}, func(in []*G.Node) (*G.Node, error) {
					s, err := Add(in[0], in[1])
					if err != nil {
						return nil, err
					}
					return ReLU(s)
				})
			})
		}
	}
}

func TestAddReLUGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 37))
	for _, dt := range floatTypes {
		checkGrad(t, cost(func(in []*G.Node) (*G.Node, error) {
			return AddReLU(in[0], in[1])
		}), []*tensor.Dense{asDtype(randDense(rng, 2, 3, 4, 5), dt), asDtype(randDense(rng, 2, 3, 4, 5), dt)}, gradTolerance(dt))
	}
}

// TestAddGradientAccumulates uses a as both inputs of Add and once more, so that gorgonia sums three copies
// of the output gradient into a's gradient: d/da Σ r·(2a + a) = 3r.
func TestAddGradientAccumulates(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 31))
	for _, dt := range floatTypes {
		checkGrad(t, cost(func(in []*G.Node) (*G.Node, error) {
			s, err := Add(in[0], in[0])
			if err != nil {
				return nil, err
			}
			return Add(s, in[0])
		}), []*tensor.Dense{asDtype(randDense(rng, 2, 3, 4), dt)}, gradTolerance(dt))
	}
}

func TestAddShapeErrors(t *testing.T) {
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float32, G.WithShape(2, 3), G.WithName("a"))
	for i, b := range []*G.Node{
		G.NewMatrix(g, tensor.Float32, G.WithShape(3, 2), G.WithName("b")),
		G.NewMatrix(g, tensor.Float64, G.WithShape(2, 3), G.WithName("b64")),
	} {
		if _, err := Add(a, b); !errors.Is(err, ErrShape) {
			t.Errorf("case %d: error %v, want ErrShape", i, err)
		}
	}
	ai := G.NewMatrix(g, tensor.Int, G.WithShape(2, 3), G.WithName("ai"))
	if _, err := Add(ai, ai); !errors.Is(err, ErrShape) {
		t.Errorf("int inputs: error %v, want ErrShape", err)
	}
}

func ExampleAdd() {
	g := G.NewGraph()
	a := G.NewVector(g, tensor.Float32, G.WithShape(3), G.WithName("a"),
		G.WithValue(tensor.New(tensor.WithBacking([]float32{1, 2, 3}))))
	b := G.NewVector(g, tensor.Float32, G.WithShape(3), G.WithName("b"),
		G.WithValue(tensor.New(tensor.WithBacking([]float32{10, 20, 30}))))
	y, err := Add(a, b)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := runGraph(g); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(y.Value().Data())
	// Output: [11 22 33]
}
