package ops

import (
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// randDense returns a float64 tensor of the given shape with values uniform in [-1, 1).
func randDense(rng *rand.Rand, shape ...int) *tensor.Dense {
	d := tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(shape...))
	for i := range d.Float64s() {
		d.Float64s()[i] = 2*rng.Float64() - 1
	}
	return d
}

// weightedSum returns Σ out·r for a fixed pseudo-random r, a scalar cost whose gradient with respect to out
// is r, so every output element is checked with its own weight.
func weightedSum(out *G.Node) (*G.Node, error) {
	rng := rand.New(rand.NewPCG(7, 11))
	r := randDense(rng, out.Shape()...)
	var w *G.Node
	if out.Dtype() == tensor.Float32 {
		f := make([]float32, r.DataSize())
		for i, v := range r.Float64s() {
			f[i] = float32(v)
		}
		w = G.NewConstant(tensor.New(tensor.WithShape(out.Shape().Clone()...), tensor.WithBacking(f)))
	} else {
		w = G.NewConstant(r)
	}
	p, err := G.HadamardProd(out, w)
	if err != nil {
		return nil, err
	}
	return G.Sum(p)
}

func TestQuickGrads(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	bnTrain := NewBatchNorm(3)
	cases := []struct {
		name   string
		inputs []*tensor.Dense
		build  func(g *G.ExprGraph, in []*G.Node) (*G.Node, error)
	}{
		{"conv", []*tensor.Dense{randDense(rng, 2, 3, 5, 5), randDense(rng, 4, 3, 3, 3)},
			func(g *G.ExprGraph, in []*G.Node) (*G.Node, error) { return Conv2d(in[0], in[1], 1, 1) }},
		{"bias", []*tensor.Dense{randDense(rng, 2, 3, 2, 2), randDense(rng, 3)},
			func(g *G.ExprGraph, in []*G.Node) (*G.Node, error) { return AddChannelBias(in[0], in[1]) }},
		{"maxpool", []*tensor.Dense{randDense(rng, 2, 3, 4, 4)},
			func(g *G.ExprGraph, in []*G.Node) (*G.Node, error) { return MaxPool2(in[0]) }},
		{"relu", []*tensor.Dense{randDense(rng, 2, 3, 4, 4)},
			func(g *G.ExprGraph, in []*G.Node) (*G.Node, error) { return ReLU(in[0]) }},
		{"gap", []*tensor.Dense{randDense(rng, 2, 3, 4, 4)},
			func(g *G.ExprGraph, in []*G.Node) (*G.Node, error) { return GlobalAvgPool(in[0]) }},
		{"bn", []*tensor.Dense{randDense(rng, 4, 3, 3, 3), randDense(rng, 3), randDense(rng, 3)},
			func(g *G.ExprGraph, in []*G.Node) (*G.Node, error) {
				return bnTrain.Apply(in[0], in[1], in[2], true, true)
			}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Logf("case %d", i)
			checkGrad(t, func(g *G.ExprGraph, in []*G.Node) (*G.Node, error) {
				out, err := c.build(g, in)
				if err != nil {
					return nil, err
				}
				return weightedSum(out)
			}, c.inputs, 1e-6)
		})
	}
}
