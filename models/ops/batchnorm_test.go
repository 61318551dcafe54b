package ops

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestBatchNormGradient(t *testing.T) {
	cases := []struct {
		shape          []int
		training, relu bool
	}{
		{[]int{4, 3, 3, 3}, true, false},
		{[]int{4, 3, 3, 3}, true, true},
		{[]int{3, 2, 1, 1}, true, true},
		{[]int{6, 5}, true, false},
		{[]int{6, 5}, true, true},
		{[]int{2, 3, 3, 3}, false, false},
		{[]int{2, 3, 3, 3}, false, true},
		{[]int{6, 5}, false, true},
	}
	for _, dt := range floatTypes {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%v/case%d", dt, i), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(i), 3))
				ch := c.shape[1]
				bn := NewBatchNorm(ch)
				for j := range bn.RunningMean { // evaluation mode normalises with these
					bn.RunningMean[j] = float32(0.3 * rng.NormFloat64())
					bn.RunningVar[j] = float32(0.5 + rng.Float64())
				}
				inputs := []*tensor.Dense{asDtype(randDense(rng, c.shape...), dt), asDtype(randDense(rng, ch), dt), asDtype(randDense(rng, ch), dt)}
				checkGrad(t, cost(func(in []*G.Node) (*G.Node, error) {
					return bn.Apply(in[0], in[1], in[2], c.training, c.relu)
				}), inputs, gradTolerance(dt))
			})
		}
	}
}

// bnReference normalises x [N,C,S...] in float64 as PyTorch does, with the given per-channel mean and
// variance.
func bnReference(x []float64, n, c, s int, gamma, beta, mean, variance []float64, eps float64, relu bool) []float64 {
	y := make([]float64, len(x))
	for i := 0; i < n; i++ {
		for ch := 0; ch < c; ch++ {
			for j := 0; j < s; j++ {
				k := (i*c+ch)*s + j
				y[k] = gamma[ch]*(x[k]-mean[ch])/math.Sqrt(variance[ch]+eps) + beta[ch]
				if relu {
					y[k] = math.Max(y[k], 0)
				}
			}
		}
	}
	return y
}

// batchStats returns the per-channel mean, biased and unbiased variance of x [N,C,S].
func batchStats(x []float64, n, c, s int) (mean, biased, unbiased []float64) {
	mean, biased, unbiased = make([]float64, c), make([]float64, c), make([]float64, c)
	m := float64(n * s)
	for ch := 0; ch < c; ch++ {
		for i := 0; i < n; i++ {
			for _, v := range x[(i*c+ch)*s : (i*c+ch+1)*s] {
				mean[ch] += v / m
			}
		}
		for i := 0; i < n; i++ {
			for _, v := range x[(i*c+ch)*s : (i*c+ch+1)*s] {
				biased[ch] += (v - mean[ch]) * (v - mean[ch]) / m
			}
		}
		unbiased[ch] = biased[ch] * m / (m - 1)
	}
	return mean, biased, unbiased
}

// runForward builds f on copies of inputs in dtype dt, runs the graph runs times and returns the last output.
func runForward(t *testing.T, inputs []*tensor.Dense, dt tensor.Dtype, runs int, f func(in []*G.Node) (*G.Node, error)) []float64 {
	t.Helper()
	g := G.NewGraph()
	nodes, _ := gradGraphInputs(g, inputs, dt)
	out, err := f(nodes)
	if err != nil {
		t.Fatal(err)
	}
	var v G.Value
	G.Read(out, &v)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	for range runs {
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		vm.Reset()
	}
	return toFloat64s(v.(*tensor.Dense))
}

// TestBatchNormMatchesReference runs a training graph twice on real images, then an evaluation graph built
// from the same BatchNorm, and compares outputs and running statistics with PyTorch's formulas.
func TestBatchNormMatchesReference(t *testing.T) {
	const n, c, s = 8, 4, 14 * 14
	images := fashionBatch(t, n) // [8,1,28,28] seen as [8,4,14,14]: real pixel statistics, many exact zeros
	if err := images.Reshape(n, c, 14, 14); err != nil {
		t.Fatal(err)
	}
	x := images.Float64s()
	gamma, beta := []float64{1, 0.5, -2, 1.5}, []float64{0, 0.1, 0.3, -1}
	inputs := []*tensor.Dense{images, tensor.New(tensor.WithBacking(gamma)), tensor.New(tensor.WithBacking(beta))}
	mean, biased, unbiased := batchStats(x, n, c, s)
	for _, dt := range floatTypes {
		for _, relu := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/relu=%t", dt, relu), func(t *testing.T) {
				tol := 1e-12
				if dt == tensor.Float32 {
					tol = 1e-5
				}
				bn := NewBatchNorm(c)
				got := runForward(t, inputs, dt, 2, func(in []*G.Node) (*G.Node, error) {
					return bn.Apply(in[0], in[1], in[2], true, relu)
				})
				assertClose(t, "training output", got, bnReference(x, n, c, s, gamma, beta, mean, biased, 1e-5, relu), tol)
				// Two updates with momentum 0.1 from mean 0, variance 1.
				runMean, runVar := make([]float64, c), make([]float64, c)
				for ch := range c {
					runMean[ch] = 0.19 * mean[ch]
					runVar[ch] = 0.81 + 0.19*unbiased[ch]
				}
				assertClose(t, "running mean", toFloat64s(tensor.New(tensor.WithBacking(bn.RunningMean))), runMean, 1e-6)
				assertClose(t, "running var", toFloat64s(tensor.New(tensor.WithBacking(bn.RunningVar))), runVar, 1e-6)

				got = runForward(t, inputs, dt, 1, func(in []*G.Node) (*G.Node, error) {
					return bn.Apply(in[0], in[1], in[2], false, relu)
				})
				stored := toFloat64s(tensor.New(tensor.WithBacking(bn.RunningMean)))
				storedVar := toFloat64s(tensor.New(tensor.WithBacking(bn.RunningVar)))
				assertClose(t, "evaluation output", got, bnReference(x, n, c, s, gamma, beta, stored, storedVar, 1e-5, relu), max(tol, 1e-6))
				assertClose(t, "running mean after evaluation", stored, runMean, 1e-6)
			})
		}
	}
}

func TestBatchNormShapeErrors(t *testing.T) {
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(2, 3, 4, 4), G.WithName("x"))
	x3 := G.NewTensor(g, tensor.Float32, 3, G.WithShape(2, 3, 4), G.WithName("x3"))
	single := G.NewTensor(g, tensor.Float32, 4, G.WithShape(1, 3, 1, 1), G.WithName("single"))
	v3 := G.NewVector(g, tensor.Float32, G.WithShape(3), G.WithName("v3"))
	v4 := G.NewVector(g, tensor.Float32, G.WithShape(4), G.WithName("v4"))
	v3d := G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("v3d"))
	short := NewBatchNorm(3)
	short.RunningVar = short.RunningVar[:2]
	cases := []struct {
		bn          *BatchNorm
		x, gamma, b *G.Node
		training    bool
	}{
		{NewBatchNorm(4), x, v4, v4, true},
		{NewBatchNorm(3), x3, v3, v3, true},
		{NewBatchNorm(3), x, v4, v3, true},
		{NewBatchNorm(3), x, v3, v3d, true},
		{NewBatchNorm(3), single, v3, v3, true},
		{short, x, v3, v3, false},
	}
	for i, c := range cases {
		if _, err := c.bn.Apply(c.x, c.gamma, c.b, c.training, false); !errors.Is(err, ErrShape) {
			t.Errorf("case %d: error %v, want ErrShape", i, err)
		}
	}
	if _, err := NewBatchNorm(3).Apply(single, v3, v3, false, false); err != nil {
		t.Errorf("evaluation with one value per channel: %v", err)
	}
}

func TestBatchNormRejectsBadRunningStats(t *testing.T) {
	x := randDense(rand.New(rand.NewPCG(1, 1)), 2, 3)
	ones := tensor.New(tensor.WithBacking([]float64{1, 1, 1}))
	for i, c := range []struct{ mean, variance float32 }{
		{0, -1}, {0, float32(math.NaN())}, {float32(math.NaN()), 1}, {0, float32(math.Inf(1))}, {float32(math.Inf(-1)), 1},
	} {
		bn := NewBatchNorm(3)
		bn.RunningMean[1], bn.RunningVar[1] = c.mean, c.variance
		g := G.NewGraph()
		nodes, _ := gradGraphInputs(g, []*tensor.Dense{x, ones, ones}, tensor.Float32)
		if _, err := bn.Apply(nodes[0], nodes[1], nodes[2], false, false); err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(g)
		err := vm.RunAll()
		vm.Close()
		// The tape machine's error has no Unwrap; its Err method returns the op's error.
		var vmErr interface{ Err() error }
		if !errors.As(err, &vmErr) || !errors.Is(vmErr.Err(), ErrBadStats) {
			t.Errorf("case %d: mean %g, variance %g: error %v, want ErrBadStats", i, c.mean, c.variance, err)
		}
	}
}

// TestBatchNormInPlace checks gorgonia's in-place execution of evaluation-mode batch norm and of AddReLU: when
// nothing reads their first input afterwards (the forward pass of frozen layers) they write over it and never
// allocate their own buffer, and when something does (here two more sums read the inputs) they write to their
// own buffer; the output is the same, bit for bit, either way.
func TestBatchNormInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 3))
	xv, gv, bv := randDense(rng, 4, 3, 5, 5), randDense(rng, 3), randDense(rng, 3)
	var outs [][]float64
	for _, keepInputs := range []bool{false, true} {
		g := G.NewGraph()
		nodes, _ := gradGraphInputs(g, []*tensor.Dense{xv, gv, bv, xv}, tensor.Float32)
		x, err := nonLeaf(nodes[0])
		if err != nil {
			t.Fatal(err)
		}
		y, err := NewBatchNorm(3).Apply(x, nodes[1], nodes[2], false, false)
		if err != nil {
			t.Fatal(err)
		}
		out, err := AddReLU(y, nodes[3])
		if err != nil {
			t.Fatal(err)
		}
		if keepInputs { // these read x and y after out, so both stay live past the two ops
			for _, in := range []*G.Node{x, y} {
				if _, err := Add(in, out); err != nil {
					t.Fatal(err)
				}
			}
		}
		vm := G.NewTapeMachine(g)
		for range 2 { // the second run finds every register holding a value
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			vm.Reset()
		}
		bnOwn, addOwn := y.Op().(*bnOp).out.t != nil, out.Op().(*addOp).out.t != nil
		if bnOwn != keepInputs || addOwn != keepInputs {
			t.Errorf("inputs read later %t: batch norm used its own buffer %t, AddReLU %t", keepInputs, bnOwn, addOwn)
		}
		outs = append(outs, toFloat64s(out.Value().(*tensor.Dense)))
		vm.Close()
	}
	assertClose(t, "output in place and not", outs[0], outs[1], 0)
}
