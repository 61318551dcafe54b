package optim

import (
	"math"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"

	"github.com/bicyc/bicyc/models/ops"

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

// denseGrad is a parameter and its gradient as G.ValueGrad, without a graph.
type denseGrad struct{ w, g *tensor.Dense }

func (d denseGrad) Value() G.Value         { return d.w }
func (d denseGrad) Grad() (G.Value, error) { return d.g, nil }

// TestSGDStepSplit checks that the update split over goroutines (stepRanges) gives every weight bit for
// bit what one pass over the parameters in order gives, with PyTorch's arithmetic written out below, and
// the gradient norm to 1e-12, for 1 to 3 threads, over parameters of sizes that split inside a tensor,
// with clipping on and a split learning rate, over two steps (the second reads the velocity).
func TestSGDStepSplit(t *testing.T) {
	sizes := []int{3, 40000, 1, 70001, 9, 25000, 4096}
	for _, threads := range []int{1, 2, 3} {
		ops.SetThreads(threads)
		rng := rand.New(rand.NewPCG(5, 6))
		var model []G.ValueGrad
		var ws, gs, vs [][]float32
		s := &SGD{LR: 0.05, Momentum: 0.9, WeightDecay: 5e-4, ClipNorm: 1, LRScale: map[*tensor.Dense]float64{}}
		for i, n := range sizes {
			w, g := make([]float32, n), make([]float32, n)
			for j := range w {
				w[j] = float32(rng.NormFloat64())
			}
			wt := tensor.New(tensor.WithShape(n), tensor.WithBacking(w))
			model = append(model, denseGrad{wt, tensor.New(tensor.WithShape(n), tensor.WithBacking(g))})
			ws, gs, vs = append(ws, slices.Clone(w)), append(gs, g), append(vs, make([]float32, n))
			if i%3 == 1 {
				s.LRScale[wt] = 0.1
			}
		}
		for step := range 2 {
			var sq float64
			want := make([][]float32, len(gs))
			for i, g := range gs {
				for j := range g {
					g[j] = float32(rng.NormFloat64()) * 0.01
					sq += float64(g[j]) * float64(g[j])
				}
				want[i] = slices.Clone(g)
			}
			if err := s.Step(model); err != nil {
				t.Fatal(err)
			}
			if math.Abs(s.LastNorm-math.Sqrt(sq)) > 1e-12*math.Sqrt(sq) {
				t.Errorf("threads %d, step %d: norm %.17g, want %.17g", threads, step+1, s.LastNorm, math.Sqrt(sq))
			}
			scale := ClipScale(math.Sqrt(sq), s.ClipNorm)
			for i, w := range ws {
				lr := float32(s.LR)
				if f, ok := s.LRScale[model[i].(denseGrad).w]; ok {
					lr = float32(s.LR * f)
				}
				got := model[i].(denseGrad).w.Data().([]float32)
				for j := range w {
					d := want[i][j]*scale + float32(s.WeightDecay)*w[j]
					vs[i][j] = float32(s.Momentum)*vs[i][j] + d
					w[j] -= lr * vs[i][j]
					if got[j] != w[j] || gs[i][j] != 0 {
						t.Fatalf("threads %d, step %d, parameter %d[%d]: w %v, want %v; gradient %v, want 0",
							threads, step+1, i, j, got[j], w[j], gs[i][j])
					}
				}
			}
		}
	}
	ops.SetThreads(0)
}

// BenchmarkSGDStep measures a step over the convolution weights of ResNet-18 (3x32x32 stem, 11.2 million
// parameters), reporting CPU time per step beside wall time.
func BenchmarkSGDStep(b *testing.B) {
	var sizes []int
	in := 3
	for _, c := range []int{64, 64, 64, 64, 64, 128, 128, 128, 128, 256, 256, 256, 256, 512, 512, 512, 512} {
		sizes = append(sizes, c*in*9, c, c)
		if c != in && in != 3 {
			sizes = append(sizes, c*in, c, c)
		}
		in = c
	}
	var model []G.ValueGrad
	for _, n := range sizes {
		model = append(model, denseGrad{tensor.New(tensor.WithShape(n), tensor.WithBacking(make([]float32, n))),
			tensor.New(tensor.WithShape(n), tensor.WithBacking(make([]float32, n)))})
	}
	s := &SGD{LR: 0.05, Momentum: 0.9, WeightDecay: 5e-4, ClipNorm: 1}
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	for b.Loop() {
		if err := s.Step(model); err != nil {
			b.Fatal(err)
		}
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "CPU-ms/op")
}
