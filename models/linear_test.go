package models

import (
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/safetensors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// runModel builds a model with build on a float32 input of x's shape and returns its output on x.
func runModel(t testing.TB, x *tensor.Dense, build func(g *G.ExprGraph, in *G.Node) (*Built, error)) []float32 {
	t.Helper()
	g := G.NewGraph()
	in := G.NewTensor(g, tensor.Float32, x.Dims(), G.WithShape(x.Shape().Clone()...), G.WithName("x"))
	built, err := build(g, in)
	if err != nil {
		t.Fatal(err)
	}
	r := newGraphRun(t, g, in, built, false)
	defer r.vm.Close()
	return r.run(t, x)
}

// flatFashion returns n Fashion-MNIST test images as [n,784] rows.
func flatFashion(t testing.TB, n int) *tensor.Dense {
	x := fashionBatch(t, n)
	return tensor.New(tensor.WithShape(n, 784), tensor.WithBacking(x.Data().([]float32)))
}

func TestLinearForward(t *testing.T) {
	cases := []struct {
		bias bool
		want []float32
	}{
		// x = [[1 2] [3 -1]], W = [[1 0] [0 1] [1 1]], b = [0.5 -0.5 2].
		{true, []float32{1.5, 1.5, 5, 3.5, -1.5, 4}},
		{false, []float32{1, 2, 3, 3, -1, 2}},
	}
	for i, c := range cases {
		l := NewLinear(2, 3, c.bias, rand.New(rand.NewPCG(1, 1)))
		state := []safetensors.Tensor{{Name: "weight", Shape: []int{3, 2}, Data: []float32{1, 0, 0, 1, 1, 1}}}
		if c.bias {
			state = append(state, safetensors.Tensor{Name: "bias", Shape: []int{3}, Data: []float32{0.5, -0.5, 2}})
		}
		if err := l.SetState("", state); err != nil {
			t.Fatal(err)
		}
		x := tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float32{1, 2, 3, -1}))
		got := runModel(t, x, func(g *G.ExprGraph, in *G.Node) (*Built, error) { return l.Build(g, in) })
		if !slices.Equal(got, c.want) {
			t.Errorf("case %d (bias %v): y = %v, want %v", i, c.bias, got, c.want)
		}
	}
}

func TestLinearInit(t *testing.T) {
	l := NewLinear(100, 50, true, rand.New(rand.NewPCG(2, 3)))
	bound := float32(1 / math.Sqrt(100))
	for i, p := range l.Params() {
		data := p.Data().([]float32)
		var lo, hi float32
		for _, v := range data {
			lo, hi = min(lo, v), max(hi, v)
		}
		// U(-0.1, 0.1): all inside, and with 50 or 5000 draws the extremes come close to the bounds.
		if lo < -bound || hi > bound || lo > -0.8*bound || hi < 0.8*bound {
			t.Errorf("param %d: values in [%v, %v], want spread over [-%v, %v]", i, lo, hi, bound, bound)
		}
	}
	if l.NumParams() != 100*50+50 || l.In() != 100 || l.Out() != 50 || !l.HasBias() {
		t.Errorf("NumParams %d In %d Out %d HasBias %v", l.NumParams(), l.In(), l.Out(), l.HasBias())
	}
}

func TestLinearStatePrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	l := NewLinear(3, 2, true, rng)
	state := l.State("head1.")
	if names := []string{state[0].Name, state[1].Name}; !slices.Equal(names, []string{"head1.weight", "head1.bias"}) {
		t.Fatalf("state names %v", names)
	}
	// Other models' tensors in the same list are ignored; the layer's own must all be there.
	other := NewLinear(3, 2, true, rng)
	mixed := append(other.State("head2."), state...)
	if err := other.SetState("head1.", mixed); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(other.State("head1.")[0].Data, state[0].Data) {
		t.Error("SetState with a prefix did not load the prefixed tensors")
	}
	err := other.SetState("head3.", mixed)
	if !errors.Is(err, ErrBadState) || !strings.Contains(err.Error(), `missing tensor "head3.weight"`) {
		t.Errorf("SetState under an absent prefix: error %v", err)
	}
	noBias := NewLinear(3, 2, false, rng)
	if err := noBias.SetState("head1.", state); err == nil || !strings.Contains(err.Error(), `unexpected tensor "head1.bias"`) {
		t.Errorf("bias into a layer without bias: error %v", err)
	}
}

func TestLinearSaveLoad(t *testing.T) {
	for i, bias := range []bool{true, false} {
		l := NewLinear(784, 10, bias, rand.New(rand.NewPCG(6, uint64(i))))
		path := filepath.Join(t.TempDir(), "head.safetensors")
		if err := l.Save(path); err != nil {
			t.Fatal(err)
		}
		loaded, err := LoadLinear(path)
		if err != nil {
			t.Fatal(err)
		}
		if loaded.In() != 784 || loaded.Out() != 10 || loaded.HasBias() != bias {
			t.Fatalf("case %d: loaded %dx%d bias %v", i, loaded.In(), loaded.Out(), loaded.HasBias())
		}
		x := flatFashion(t, 16)
		want := runModel(t, x, func(g *G.ExprGraph, in *G.Node) (*Built, error) { return l.Build(g, in) })
		got := runModel(t, x, func(g *G.ExprGraph, in *G.Node) (*Built, error) { return loaded.Build(g, in) })
		if !slices.Equal(got, want) {
			t.Errorf("case %d: loaded head gives different logits on Fashion-MNIST images", i)
		}
	}
}

func TestLinearCloneIsDeep(t *testing.T) {
	l := NewLinear(4, 3, true, rand.New(rand.NewPCG(7, 8)))
	c := l.Clone()
	want := c.State("")
	l.Params()[0].Data().([]float32)[0] += 1
	l.Params()[1].Data().([]float32)[0] += 1
	for i, s := range c.State("") {
		if !slices.Equal(s.Data, want[i].Data) {
			t.Errorf("changing the original changed the clone's %s", s.Name)
		}
	}
}

func TestLinearBuildErrors(t *testing.T) {
	l := NewLinear(4, 3, true, rand.New(rand.NewPCG(1, 1)))
	g := G.NewGraph()
	cases := []*G.Node{
		G.NewMatrix(g, tensor.Float32, G.WithShape(2, 5), G.WithName("wide")),
		G.NewMatrix(g, tensor.Float64, G.WithShape(2, 4), G.WithName("f64")),
		G.NewVector(g, tensor.Float32, G.WithShape(4), G.WithName("vec")),
	}
	for i, x := range cases {
		if _, err := l.Build(g, x); err == nil {
			t.Errorf("case %d: Build on %v %v: got nil error", i, x.Shape(), x.Dtype())
		}
	}
}
