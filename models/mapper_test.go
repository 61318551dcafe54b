package models

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bicyc/bicyc/arch"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// fashionFeatures returns convnet features [n,s] of n Fashion-MNIST images from a fresh backbone.
func fashionFeatures(t testing.TB, n, s int) *tensor.Dense {
	t.Helper()
	b := mustBackbone(t, arch.ConvNet, 1, s, 31)
	r := buildBackboneRun(t, b, tensor.Shape{n, 1, 28, 28}, false, false)
	defer r.vm.Close()
	return tensor.New(tensor.WithShape(n, s), tensor.WithBacking(r.run(t, fashionBatch(t, n))))
}

// TestMapperMLPMatchesReference compares the MLP mapper with fc2(gelu(fc1 x)) computed here in float64.
func TestMapperMLPMatchesReference(t *testing.T) {
	const n, s, h = 5, 8, 4
	m, err := NewMapper(arch.MLP, s, h, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	x := fashionFeatures(t, n, s)
	got := runModel(t, x, func(g *G.ExprGraph, in *G.Node) (*Built, error) { return m.Build(g, in) })
	p := m.Params()
	w1, b1, w2, b2 := p[0].Data().([]float32), p[1].Data().([]float32), p[2].Data().([]float32), p[3].Data().([]float32)
	xs := x.Data().([]float32)
	for i := range n {
		hidden := make([]float64, h*s)
		for j := range hidden {
			v := float64(b1[j])
			for k := range s {
				v += float64(w1[j*s+k]) * float64(xs[i*s+k])
			}
			hidden[j] = v * 0.5 * (1 + math.Erf(v/math.Sqrt2))
		}
		for j := range s {
			want := float64(b2[j])
			for k, hv := range hidden {
				want += float64(w2[j*h*s+k]) * hv
			}
			if d := math.Abs(float64(got[i*s+j]) - want); d > 1e-5*math.Max(1, math.Abs(want)) {
				t.Fatalf("y[%d,%d] = %v, want %v", i, j, got[i*s+j], want)
			}
		}
	}
}

// TestResidualMapperStartsAsIdentity checks that an untrained residual-mlp
// returns its input exactly, and that after fc2 changes it is x + MLP(x)
// with MLP the plain mapper's.
func TestResidualMapperStartsAsIdentity(t *testing.T) {
	const n, s, h = 6, 8, 4
	m, err := NewMapper(arch.ResidualMLP, s, h, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	x := fashionFeatures(t, n, s)
	build := func(mp *Mapper) []float32 {
		return runModel(t, x, func(g *G.ExprGraph, in *G.Node) (*Built, error) { return mp.Build(g, in) })
	}
	if got, want := build(m), x.Data().([]float32); !slices.Equal(got, want) {
		t.Fatalf("untrained residual mapper: %v, want its input %v", got[:s], want[:s])
	}
	fc2 := m.Params()[2].Data().([]float32)
	for i := range fc2 {
		fc2[i] = float32(i%7) / 10
	}
	plain := newMapper(arch.MLP, s, h, newLinear)
	if err := plain.SetState(m.State()); err != nil {
		t.Fatal(err)
	}
	res, mlp, xs := build(m), build(plain), x.Data().([]float32)
	for i := range res {
		if d := math.Abs(float64(res[i] - (xs[i] + mlp[i]))); d > 1e-5 {
			t.Fatalf("residual[%d] = %v, want x + mlp = %v", i, res[i], xs[i]+mlp[i])
		}
	}
}

func TestMapperState(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		kind   arch.Mapper
		s, h   int
		state  string
		params int
	}{
		{arch.MLP, 4, 32, "[fc1.weight [128 4] fc1.bias [128] fc2.weight [4 128] fc2.bias [4]]", 2*32*4*4 + 32*4 + 4},
		{arch.MLP, 64, DefaultHiddenMult, "[fc1.weight [2048 64] fc1.bias [2048] fc2.weight [64 2048] fc2.bias [64]]", 2*2048*64 + 2048 + 64},
		{arch.Linear, 4, 0, "[weight [4 4]]", 16},
		{arch.LinearBias, 4, 0, "[weight [4 4] bias [4]]", 20},
	}
	for i, c := range cases {
		m, err := NewMapper(c.kind, c.s, c.h, rng)
		if err != nil {
			t.Fatal(err)
		}
		var desc []any
		for _, ts := range m.State() {
			desc = append(desc, ts.Name, ts.Shape)
		}
		if got := fmt.Sprint(desc); got != c.state {
			t.Errorf("case %d: state %s, want %s", i, got, c.state)
		}
		if m.NumParams() != c.params || m.Kind() != c.kind || m.Dim() != c.s {
			t.Errorf("case %d: NumParams %d kind %s dim %d, want %d %s %d", i, m.NumParams(), m.Kind(), m.Dim(), c.params, c.kind, c.s)
		}
	}
}

func TestMapperSaveLoad(t *testing.T) {
	const n, s = 16, 8
	x := fashionFeatures(t, n, s)
	for i, kind := range []arch.Mapper{arch.MLP, arch.Linear, arch.LinearBias, arch.ResidualMLP} {
		m, err := NewMapper(kind, s, 4, rand.New(rand.NewPCG(5, uint64(i))))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "mapper.safetensors")
		if err := m.Save(path); err != nil {
			t.Fatal(err)
		}
		loaded, err := LoadMapper(path)
		if err != nil {
			t.Fatal(err)
		}
		if loaded.Kind() != kind || loaded.Dim() != s || loaded.HiddenMult() != m.HiddenMult() {
			t.Fatalf("case %d: loaded %s dim %d hidden %d", i, loaded.Kind(), loaded.Dim(), loaded.HiddenMult())
		}
		want := runModel(t, x, func(g *G.ExprGraph, in *G.Node) (*Built, error) { return m.Build(g, in) })
		got := runModel(t, x, func(g *G.ExprGraph, in *G.Node) (*Built, error) { return loaded.Build(g, in) })
		if !slices.Equal(got, want) {
			t.Errorf("case %d %s: loaded mapper gives different outputs on Fashion-MNIST features", i, kind)
		}
		if _, err := LoadBackbone(path); !errors.Is(err, ErrBadState) {
			t.Errorf("case %d: a mapper file loaded as a backbone: error %v, want ErrBadState", i, err)
		}
	}
}

// TestMapperSolverAndClone checks that a solver step through a training graph reaches a second graph of the
// mapper, and not its clone.
func TestMapperSolverAndClone(t *testing.T) {
	const s = 8
	m, err := NewMapper(arch.MLP, s, 2, rand.New(rand.NewPCG(6, 7)))
	if err != nil {
		t.Fatal(err)
	}
	frozen := m.Clone()
	x8, x3 := fashionFeatures(t, 8, s), fashionFeatures(t, 3, s)
	build := func(mm *Mapper, x *tensor.Dense, grads bool) *graphRun {
		g := G.NewGraph()
		in := G.NewTensor(g, tensor.Float32, 2, G.WithShape(x.Shape().Clone()...), G.WithName("z"))
		built, err := mm.Build(g, in)
		if err != nil {
			t.Fatal(err)
		}
		return newGraphRun(t, g, in, built, grads)
	}
	train, eval, evalFrozen := build(m, x8, true), build(m, x3, false), build(frozen, x3, false)
	defer train.vm.Close()
	defer eval.vm.Close()
	defer evalFrozen.vm.Close()
	before := eval.run(t, x3)
	if f := evalFrozen.run(t, x3); !slices.Equal(f, before) {
		t.Fatal("clone differs from the original before training")
	}
	train.run(t, x8)
	if err := G.NewMomentum(G.WithLearnRate(0.5)).Step(G.NodesToValueGrads(train.out.Params)); err != nil {
		t.Fatal(err)
	}
	if after := eval.run(t, x3); slices.Equal(after, before) {
		t.Error("the evaluation graph did not see the solver step")
	}
	if f := evalFrozen.run(t, x3); !slices.Equal(f, before) {
		t.Error("the solver step changed the clone")
	}
}

func TestNewMapperErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	cases := []struct {
		kind arch.Mapper
		s, h int
	}{{"moe", 8, 32}, {arch.MLP, 0, 32}, {arch.MLP, 8, 0}, {arch.Linear, -1, 0}}
	for i, c := range cases {
		if _, err := NewMapper(c.kind, c.s, c.h, rng); err == nil {
			t.Errorf("case %d: NewMapper(%q, %d, %d): got nil error", i, c.kind, c.s, c.h)
		}
	}
}

// TestLinearBiasMapper checks that arch.LinearBias is arch.Linear plus a trained bias: from the same rng the
// weight is the same, and on Fashion-MNIST features its output is arch.Linear's plus the bias on every row.
func TestLinearBiasMapper(t *testing.T) {
	const n, s = 16, 8
	x := fashionFeatures(t, n, s)
	plain, err := NewMapper(arch.Linear, s, 0, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	biased, err := NewMapper(arch.LinearBias, s, 0, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plain.Params()[0].Data().([]float32), biased.Params()[0].Data().([]float32)) {
		t.Fatal("linear-bias weight differs from linear's from the same rng")
	}
	bias := biased.Params()[1].Data().([]float32)
	if slices.Equal(bias, make([]float32, s)) {
		t.Fatal("bias not initialised")
	}
	want := runModel(t, x, func(g *G.ExprGraph, in *G.Node) (*Built, error) { return plain.Build(g, in) })
	got := runModel(t, x, func(g *G.ExprGraph, in *G.Node) (*Built, error) { return biased.Build(g, in) })
	for i := range got {
		if d := got[i] - want[i] - bias[i%s]; d > 1e-6 || d < -1e-6 {
			t.Fatalf("row %d feature %d: linear-bias %g, linear %g + bias %g", i/s, i%s, got[i], want[i], bias[i%s])
		}
	}
}
