package optim

import (
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestSGDStep checks one update against hand arithmetic: the cost
// sum(w * x) has gradient x = (3, 4), of norm 5, clipped to norm 1:
//
//	g = (0.6, 0.8) + 0.5 * w,  w = (1, -2)  ->  g = (1.1, -0.2)
//	v = g (first step),        w -= 0.1 * v -> (0.89, -1.98)
//
// and a second step with momentum 0.9 must see a fresh gradient, not an
// accumulated one.
func TestSGDStep(t *testing.T) {
	s := &SGD{LR: 0.1, Momentum: 0.9, WeightDecay: 0.5, ClipNorm: 1}
	wv, step := sgdOnDot(t, s)
	step()
	want := []float64{0.89, -1.98}
	for i, v := range wv.Data().([]float32) {
		if math.Abs(float64(v)-want[i]) > 1e-6 {
			t.Fatalf("after step 1: w[%d] = %g, want %g", i, v, want[i])
		}
	}
	if math.Abs(s.LastNorm-5) > 1e-6 {
		t.Errorf("gradient norm %g, want 5", s.LastNorm)
	}
	// Step 2: g = (0.6, 0.8) + 0.5*(0.89, -1.98) = (1.045, -0.19);
	// v = 0.9*(1.1, -0.2) + g = (2.035, -0.37); w -= 0.1 v.
	step()
	want = []float64{0.89 - 0.2035, -1.98 + 0.037}
	for i, v := range wv.Data().([]float32) {
		if math.Abs(float64(v)-want[i]) > 1e-5 {
			t.Errorf("after step 2: w[%d] = %g, want %g", i, v, want[i])
		}
	}
}

// sgdOnDot returns w = (1, -2) and a function that runs one SGD step of s on the cost sum(w * (3, 4)).
func sgdOnDot(t *testing.T, s *SGD) (*tensor.Dense, func()) {
	g := G.NewGraph()
	wv := tensor.New(tensor.WithBacking([]float32{1, -2}))
	w := G.NewVector(g, tensor.Float32, G.WithShape(2), G.WithName("w"), G.WithValue(wv))
	x := G.NewConstant(tensor.New(tensor.WithBacking([]float32{3, 4})))
	prod, _ := G.HadamardProd(w, x)
	cost, _ := G.Sum(prod)
	if _, err := G.Grad(cost, w); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g, G.BindDualValues(w))
	t.Cleanup(func() { vm.Close() })
	return wv, func() {
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		if err := s.Step(G.NodesToValueGrads(G.Nodes{w})); err != nil {
			t.Fatal(err)
		}
		vm.Reset()
	}
}

// TestSGDLRScale repeats TestSGDStep's first step with the weight's learning rate halved: w -= 0.05 * v.
func TestSGDLRScale(t *testing.T) {
	s := &SGD{LR: 0.1, Momentum: 0.9, WeightDecay: 0.5, ClipNorm: 1}
	wv, step := sgdOnDot(t, s)
	s.LRScale = map[*tensor.Dense]float64{wv: 0.5}
	step()
	for i, want := range []float64{1 - 0.055, -2 + 0.01} {
		if v := wv.Data().([]float32)[i]; math.Abs(float64(v)-want) > 1e-6 {
			t.Errorf("w[%d] = %g, want %g", i, v, want)
		}
	}
}
