package ops

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestAddChannelBias(t *testing.T) {
	for _, dt := range floatTypes {
		for i, shape := range [][]int{{2, 3, 4, 5}, {5, 4}, {3, 2, 1, 1}} {
			rng := rand.New(rand.NewPCG(uint64(i), 10))
			inputs := []*tensor.Dense{randDense(rng, shape...), randDense(rng, shape[1])}
			mine := func(in []*G.Node) (*G.Node, error) { return AddChannelBias(in[0], in[1]) }
			t.Run(fmt.Sprintf("%v/case%d/gradient", dt, i), func(t *testing.T) {
				cast := []*tensor.Dense{asDtype(inputs[0], dt), asDtype(inputs[1], dt)}
				checkGrad(t, cost(mine), cast, gradTolerance(dt))
			})
			t.Run(fmt.Sprintf("%v/case%d/stock", dt, i), func(t *testing.T) {
				tol := 1e-12
				if dt == tensor.Float32 {
					tol = 1e-6
				}
				compareWithStock(t, inputs, dt, tol, mine, func(in []*G.Node) (*G.Node, error) {
					if len(shape) == 2 {
						b, err := G.Reshape(in[1], tensor.Shape{1, shape[1]})
						if err != nil {
							return nil, err
						}
						return G.BroadcastAdd(in[0], b, nil, []byte{0})
					}
					b, err := G.Reshape(in[1], tensor.Shape{1, shape[1], 1, 1})
					if err != nil {
						return nil, err
					}
					return G.BroadcastAdd(in[0], b, nil, []byte{0, 2, 3})
				})
			})
		}
	}
}

func TestAddChannelBiasShapeErrors(t *testing.T) {
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(2, 3, 4, 4), G.WithName("x"))
	x3 := G.NewTensor(g, tensor.Float32, 3, G.WithShape(2, 3, 4), G.WithName("x3"))
	b3 := G.NewVector(g, tensor.Float32, G.WithShape(3), G.WithName("b3"))
	b4 := G.NewVector(g, tensor.Float32, G.WithShape(4), G.WithName("b4"))
	b3d := G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("b3d"))
	bm := G.NewMatrix(g, tensor.Float32, G.WithShape(1, 3), G.WithName("bm"))
	for i, c := range [][2]*G.Node{{x, b4}, {x3, b3}, {x, b3d}, {x, bm}} {
		if _, err := AddChannelBias(c[0], c[1]); !errors.Is(err, ErrShape) {
			t.Errorf("case %d: error %v, want ErrShape", i, err)
		}
	}
}
