package ops

import (
	"fmt"
	"math"
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

// asDtype returns a copy of d converted to dt (float32 or float64).
func asDtype(d *tensor.Dense, dt tensor.Dtype) *tensor.Dense {
	src := toFloat64s(d)
	if dt == tensor.Float64 {
		return tensor.New(tensor.WithShape(d.Shape().Clone()...), tensor.WithBacking(src))
	}
	f := make([]float32, len(src))
	for i, v := range src {
		f[i] = float32(v)
	}
	return tensor.New(tensor.WithShape(d.Shape().Clone()...), tensor.WithBacking(f))
}

// weightedSum returns Σ out·r for a fixed pseudo-random r in [-1, 1), a scalar cost whose gradient with
// respect to out is r, so that every output element is checked with its own weight.
func weightedSum(out *G.Node) (*G.Node, error) {
	rng := rand.New(rand.NewPCG(7, 11))
	w := G.NewConstant(asDtype(randDense(rng, out.Shape()...), out.Dtype()))
	p, err := G.HadamardProd(out, w)
	if err != nil {
		return nil, err
	}
	return G.Sum(p)
}

// evalWithGrads builds f on copies of inputs converted to dt, adds the cost weightedSum(f(inputs)), runs one
// forward and backward pass, and returns f's output and the gradients of the cost with respect to inputs.
func evalWithGrads(inputs []*tensor.Dense, dt tensor.Dtype, f func(in []*G.Node) (*G.Node, error)) ([]float64, [][]float64, error) {
	g := G.NewGraph()
	nodes, _ := gradGraphInputs(g, inputs, dt)
	out, err := f(nodes)
	if err != nil {
		return nil, nil, err
	}
	var outVal G.Value
	G.Read(out, &outVal)
	cost, err := weightedSum(out)
	if err != nil {
		return nil, nil, err
	}
	if _, err := G.Grad(cost, nodes...); err != nil {
		return nil, nil, err
	}
	vm := G.NewTapeMachine(g, G.BindDualValues(nodes...))
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, nil, err
	}
	grads := make([][]float64, len(nodes))
	for i, n := range nodes {
		gr, err := n.Grad()
		if err != nil {
			return nil, nil, err
		}
		grads[i] = toFloat64s(gr.(*tensor.Dense))
	}
	return toFloat64s(outVal.(*tensor.Dense)), grads, nil
}

// assertClose fails t unless max|got-want| <= tol·max(max|want|, 1e-3).
func assertClose(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d values, want %d", what, len(got), len(want))
		return
	}
	scale, worst, at := 1e-3, 0.0, 0
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); d > worst || math.IsNaN(d) {
			worst, at = d, i
		}
	}
	if !(worst <= tol*scale) {
		t.Errorf("%s: max |got-want| = %.3g at %d (got %.7g, want %.7g), more than %.3g·%.3g", what, worst, at, got[at], want[at], tol, scale)
	}
}

// compareWithStock runs mine and stock on the same inputs in dtype dt and asserts that their outputs and
// the gradients of a weighted sum of their outputs agree within tol.
func compareWithStock(t *testing.T, inputs []*tensor.Dense, dt tensor.Dtype, tol float64, mine, stock func(in []*G.Node) (*G.Node, error)) {
	t.Helper()
	gotOut, gotGrads, err := evalWithGrads(inputs, dt, mine)
	if err != nil {
		t.Fatalf("ops graph: %v", err)
	}
	wantOut, wantGrads, err := evalWithGrads(inputs, dt, stock)
	if err != nil {
		t.Fatalf("stock graph: %v", err)
	}
	assertClose(t, "output", gotOut, wantOut, tol)
	for i := range inputs {
		assertClose(t, fmt.Sprintf("gradient of input %d", i), gotGrads[i], wantGrads[i], tol)
	}
}

// fashionBatch returns the first n Fashion-MNIST training images as a float64 [n,1,28,28] tensor.
func fashionBatch(t testing.TB, n int) *tensor.Dense {
	t.Helper()
	images, _, err := readFashion(n)
	if err != nil {
		t.Fatalf("fashion-mnist: %v", err)
	}
	return asDtype(tensor.New(tensor.WithShape(n, 1, 28, 28), tensor.WithBacking(images)), tensor.Float64)
}

// cost returns build's output reduced by weightedSum, the form checkGrad needs.
func cost(build func(in []*G.Node) (*G.Node, error)) func(*G.ExprGraph, []*G.Node) (*G.Node, error) {
	return func(_ *G.ExprGraph, in []*G.Node) (*G.Node, error) {
		out, err := build(in)
		if err != nil {
			return nil, err
		}
		return weightedSum(out)
	}
}

var floatTypes = []tensor.Dtype{tensor.Float64, tensor.Float32}

// gradTolerance is the checkGrad tolerance for symbolic gradients computed in dt: the worst errors measured
// were about 3e-6 in float32 and 1e-7 in float64.
func gradTolerance(dt tensor.Dtype) float64 {
	if dt == tensor.Float32 {
		return 1e-4
	}
	return 1e-6
}

// nonLeaf returns x + 0: Conv2d builds no input gradient for a leaf x, and the tests differentiate with
// respect to their inputs.
func nonLeaf(x *G.Node) (*G.Node, error) {
	zero := G.NewConstant(0.0)
	if x.Dtype() == tensor.Float32 {
		zero = G.NewConstant(float32(0))
	}
	return G.Add(x, zero)
}

// runGraph executes g once on a tape machine, for the examples.
func runGraph(g *G.ExprGraph) error {
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	return vm.RunAll()
}
