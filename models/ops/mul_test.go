package ops

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// mulCases are [N,in]·[out,in]ᵀ shapes: tiny, a mapper's first and second layers at batch 128 (large enough to
// be split across goroutines), and a 2-class head.
var mulCases = []struct{ n, in, out int }{{3, 4, 5}, {128, 64, 2048}, {128, 2048, 64}, {7, 64, 2}}

func TestMulTransposedMatchesStock(t *testing.T) {
	for _, dt := range floatTypes {
		for i, c := range mulCases {
			t.Run(fmt.Sprintf("%v/case%d", dt, i), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(i), 21))
				inputs := []*tensor.Dense{randDense(rng, c.n, c.in), randDense(rng, c.out, c.in)}
				compareWithStock(t, inputs, dt, 1e-5, func(in []*G.Node) (*G.Node, error) {
					return MulTransposed(in[0], in[1])
				}, func(in []*G.Node) (*G.Node, error) {
					wt, err := G.Transpose(in[1])
					if err != nil {
						return nil, err
					}
					return G.Mul(in[0], wt)
				})
			})
		}
	}
}

func TestMulTransposedGradient(t *testing.T) {
	for _, dt := range floatTypes {
		rng := rand.New(rand.NewPCG(5, 21))
		inputs := []*tensor.Dense{asDtype(randDense(rng, 4, 6), dt), asDtype(randDense(rng, 3, 6), dt)}
		checkGrad(t, cost(func(in []*G.Node) (*G.Node, error) { return MulTransposed(in[0], in[1]) }), inputs, gradTolerance(dt))
	}
}

func TestMulTransposedShapeErrors(t *testing.T) {
	g := G.NewGraph()
	x := G.NewMatrix(g, tensor.Float32, G.WithShape(4, 6), G.WithName("x"))
	cases := []struct{ x, w *G.Node }{
		{x, G.NewMatrix(g, tensor.Float32, G.WithShape(3, 5), G.WithName("w5"))},
		{x, G.NewVector(g, tensor.Float32, G.WithShape(6), G.WithName("v"))},
		{x, G.NewMatrix(g, tensor.Float64, G.WithShape(3, 6), G.WithName("w64"))},
		{G.NewMatrix(g, tensor.Int, G.WithShape(4, 6), G.WithName("xi")), G.NewMatrix(g, tensor.Int, G.WithShape(3, 6), G.WithName("wi"))},
	}
	for i, c := range cases {
		if _, err := MulTransposed(c.x, c.w); !errors.Is(err, ErrShape) {
			t.Errorf("case %d: error %v, want ErrShape", i, err)
		}
	}
}

func ExampleMulTransposed() {
	g := G.NewGraph()
	x := G.NewMatrix(g, tensor.Float32, G.WithShape(1, 2), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(1, 2), tensor.WithBacking([]float32{1, 2}))))
	// Two output features: the sum and the difference of the inputs.
	w := G.NewMatrix(g, tensor.Float32, G.WithShape(2, 2), G.WithName("w"),
		G.WithValue(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float32{1, 1, 1, -1}))))
	y, err := MulTransposed(x, w)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := runGraph(g); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(y.Value().Data())
	// Output: [3 -1]
}
