package models

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/kernels"
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestMain registers OpenBLAS as gorgonia's BLAS, as the training binaries do; run the tests with
// CGO_LDFLAGS=-lopenblas.
func TestMain(m *testing.M) {
	G.Use(netlib.Implementation{})
	kernels.RunTests(m)
}

var (
	fashionOnce sync.Once
	fashionTest *data.Dataset
	fashionErr  error
)

// fashionBatch returns the first n Fashion-MNIST test images as a float32 [n,1,28,28] tensor scaled to [0,1].
// It fails the test when the Debian package dataset-fashion-mnist is missing: the real data is part of the
// test's contract.
func fashionBatch(t testing.TB, n int) *tensor.Dense {
	t.Helper()
	fashionOnce.Do(func() {
		fashionTest, fashionErr = data.LoadIDX(
			filepath.Join(data.FashionMNISTDir, "t10k-images-idx3-ubyte.gz"),
			filepath.Join(data.FashionMNISTDir, "t10k-labels-idx1-ubyte.gz"))
	})
	if fashionErr != nil {
		t.Fatalf("loading Fashion-MNIST: %v", fashionErr)
	}
	size := fashionTest.ImageSize()
	out := make([]float32, n*size)
	for i := range n {
		for j, p := range fashionTest.Image(i) {
			out[i*size+j] = float32(p) / 255
		}
	}
	return tensor.New(tensor.WithShape(n, fashionTest.Channels, fashionTest.Height, fashionTest.Width), tensor.WithBacking(out))
}

// graphRun is a built graph with its machine.
type graphRun struct {
	g     *G.ExprGraph
	input *G.Node
	out   *Built
	vm    G.VM
}

// buildBackboneRun builds b into a new graph for inputs of the given shape, optionally with gradients of
// cost = mean(features^2) with respect to the parameters bound as dual values for a solver.
func buildBackboneRun(t testing.TB, b *Backbone, shape tensor.Shape, training, grads bool) *graphRun {
	t.Helper()
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(shape...), G.WithName("x"))
	built, err := b.Build(g, x, training)
	if err != nil {
		t.Fatal(err)
	}
	return newGraphRun(t, g, x, built, grads)
}

func newGraphRun(t testing.TB, g *G.ExprGraph, x *G.Node, built *Built, grads bool) *graphRun {
	t.Helper()
	var opts []G.VMOpt
	if grads {
		cost := G.Must(G.Mean(G.Must(G.Square(built.Output))))
		if _, err := G.Grad(cost, built.Params...); err != nil {
			t.Fatal(err)
		}
		opts = append(opts, G.BindDualValues(built.Params...))
	}
	return &graphRun{g: g, input: x, out: built, vm: G.NewTapeMachine(g, opts...)}
}

// run feeds x, runs the graph once and returns a copy of the output.
func (r *graphRun) run(t testing.TB, x *tensor.Dense) []float32 {
	t.Helper()
	if err := G.Let(r.input, x); err != nil {
		t.Fatal(err)
	}
	defer r.vm.Reset()
	if err := r.vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), r.out.Output.Value().Data().([]float32)...)
}
