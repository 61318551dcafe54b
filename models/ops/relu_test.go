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

// TestGradientsInPlace builds ReLU(BatchNorm(x·w)) under a loss and checks that, where gorgonia finds the
// incoming gradient read by nothing else, the ReLU and batch-norm gradients are written over it (the
// memory a backward pass keeps is one buffer per gradient fewer) and still equal the gradients of the
// same graph run through Do alone (the gradient check of each op covers those).
func TestGradientsInPlace(t *testing.T) {
	build := func() (*G.ExprGraph, *G.Node, *G.Node) {
		g := G.NewGraph()
		x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(2, 3, 4, 4), G.WithName("x"), G.WithValue(asDtype(randDense(rand.New(rand.NewPCG(1, 2)), 2, 3, 4, 4), tensor.Float32)))
		w := G.NewTensor(g, tensor.Float32, 4, G.WithShape(3, 3, 3, 3), G.WithName("w"), G.WithValue(asDtype(randDense(rand.New(rand.NewPCG(5, 6)), 3, 3, 3, 3), tensor.Float32)))
		h, err := Conv2d(x, w, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		gamma := G.NewVector(g, tensor.Float32, G.WithShape(3), G.WithName("gamma"), G.WithValue(tensor.New(tensor.WithBacking([]float32{1, 0.5, 2}))))
		beta := G.NewVector(g, tensor.Float32, G.WithShape(3), G.WithName("beta"), G.WithValue(tensor.New(tensor.WithBacking([]float32{0, 0.1, -0.1}))))
		if h, err = NewBatchNorm(3).Apply(h, gamma, beta, true, false); err != nil {
			t.Fatal(err)
		}
		if h, err = ReLU(h); err != nil {
			t.Fatal(err)
		}
		if h, err = G.HadamardProd(h, h); err != nil {
			t.Fatal(err)
		}
		loss, err := G.Sum(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := G.Grad(loss, w); err != nil {
			t.Fatal(err)
		}
		return g, w, loss
	}
	g, w, _ := build()
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	inPlace := 0
	for _, n := range g.AllNodes() {
		switch n.Op().(type) {
		case *reluGradOp, *bnGradOp:
			out := &n.Value().Data().([]float32)[0]
			for children := g.From(n.ID()); children.Next(); {
				in, ok := children.Node().(*G.Node).Value().Data().([]float32)
				if ok && len(in) > 0 && &in[0] == out {
					inPlace++
				}
			}
		}
	}
	if inPlace == 0 {
		t.Error("no ReLU or batch-norm gradient was written over its incoming gradient")
	}
	gw, err := w.Grad()
	if err != nil {
		t.Fatal(err)
	}
	g2, w2, _ := build()
	for _, n := range g2.AllNodes() {
		switch op := n.Op().(type) {
		case *reluGradOp:
			op.overwrite = false
		case *bnGradOp:
			op.overwrite = false
		}
	}
	vm2 := G.NewTapeMachine(g2)
	defer vm2.Close()
	if err := vm2.RunAll(); err != nil {
		t.Fatal(err)
	}
	gw2, err := w2.Grad()
	if err != nil {
		t.Fatal(err)
	}
	a, b := gw.Data().([]float32), gw2.Data().([]float32)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("filter gradient %d: %v in place, %v through Do", i, a[i], b[i])
		}
	}
}
