package cudakernels

import (
	"fmt"
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/models/ops"
	"github.com/bicyc/bicyc/models/optim"
)

// sgdParam is one parameter and its gradient as gorgonia hands them to a solver.
type sgdParam struct{ w, g *tensor.Dense }

func (p sgdParam) Value() G.Value         { return p.w }
func (p sgdParam) Grad() (G.Value, error) { return p.g, nil }

// TestSGD: sum_squares (the global gradient norm, summed on the host) and sgd_update replay three steps of
// optim.SGD with momentum, weight decay and clipping on parameters of odd sizes, with the clip active and
// not, and with sum_squares run on fewer threads than values, as many, and more.
func TestSGD(t *testing.T) {
	needHost(t)
	sizes := []int{1, 257, 100003, 7}
	for _, clip := range []float64{0, 1, 1e6} {
		for _, threads := range []int{1, 300, 4096} {
			name := fmt.Sprintf("clip %g, %d threads", clip, threads)
			cpu := &optim.SGD{LR: 0.05, Momentum: 0.9, WeightDecay: 5e-4, ClipNorm: clip}
			var params []G.ValueGrad
			w, v := make([][]float32, len(sizes)), make([][]float32, len(sizes))
			for i, n := range sizes {
				w[i] = withSentinel(randn(uint64(20+i), n, 1))
				v[i] = sentinel(n + 1)
				for j := range n {
					v[i][j] = 0
				}
				params = append(params, sgdParam{w: dense(w[i][:n], n), g: tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(n))})
			}
			for step := range 3 {
				g := make([][]float32, len(sizes))
				for i, n := range sizes {
					g[i] = withSentinel(randn(uint64(100*step+i), n, 0.3))
					copy(params[i].(sgdParam).g.Float32s(), g[i])
				}
				if err := cpu.Step(params); err != nil {
					t.Fatal(err)
				}
				var sq float64
				for i, n := range sizes {
					partial := make([]float64, threads)
					launch(t, "sum_squares", threads, 256, g[i], partial, n, threads)
					for _, p := range partial {
						sq += p
					}
				}
				norm := math.Sqrt(sq)
				if math.Abs(norm-cpu.LastNorm) > 1e-12*cpu.LastNorm {
					t.Errorf("%s, step %d: norm %v, optim.SGD's %v", name, step, norm, cpu.LastNorm)
				}
				scale := optim.ClipScale(norm, clip)
				for i, n := range sizes {
					launch(t, "sgd_update", n, 7, w[i], g[i], v[i], n, scale, float32(cpu.WeightDecay), float32(cpu.Momentum), float32(cpu.LR))
					closeTo(t, fmt.Sprintf("%s, step %d, parameter %d: gradient reset", name, step, i), g[i], make([]float32, n), 0)
				}
			}
			for i := range sizes {
				closeTo(t, fmt.Sprintf("%s: weights %d after 3 steps", name, i), w[i], params[i].(sgdParam).w.Float32s(), 1e-6)
			}
		}
	}
	// Nothing to update: the guards hold.
	w := sentinel(1)
	launch(t, "sgd_update", 0, 256, w, w, w, 0, float32(1), float32(0), float32(0.9), float32(0.1))
	closeTo(t, "sgd_update of nothing", w, nil, 0)
}

// TestSoftmaxCrossEntropy: softmax_cross_entropy's row losses, summed and scaled by 1/rows on the host, and
// its logits gradient against ops.CrossEntropy (gorgonia's LogSoftMax, HadamardProd, Sum, times −1/B), for
// one-hot targets.
func TestSoftmaxCrossEntropy(t *testing.T) {
	needHost(t)
	ce := func(in []*G.Node) (*G.Node, error) { return ops.CrossEntropy(in[0], in[1]) }
	for _, shape := range [][]int{{1, 1}, {3, 10}, {257, 7}, {256, 1000}} {
		rows, k := shape[0], shape[1]
		logits := randn(30, rows*k, 4)
		onehot := make([]float32, rows*k)
		for b := range rows {
			onehot[b*k+(b*7919)%k] = 1
		}
		want := cpuForward(t, ce, dense(logits, rows, k), dense(onehot, rows, k))
		wantGrad := cpuGrad(t, ce, []float32{1}, dense(logits, rows, k), dense(onehot, rows, k))[0]
		for _, block := range blocks {
			loss, dz := sentinel(rows+1), sentinel(rows*k+1)
			launch(t, "softmax_cross_entropy", rows, block, logits, onehot, loss, dz, rows, k, float32(1)/float32(rows))
			var sum float64
			for _, l := range loss[:rows] {
				sum += float64(l)
			}
			mean := []float32{float32(sum / float64(rows)), -12345}
			// gorgonia sums the float32 products in float32 (4e-7 off at 256x1000); the kernel in double.
			closeTo(t, label("softmax_cross_entropy loss", shape, block), mean, want, 5e-6)
			closeTo(t, label("softmax_cross_entropy loss rows", shape, block), loss[rows:], nil, 0)
			closeTo(t, label("softmax_cross_entropy gradient", shape, block), dz, wantGrad, 1e-6)
		}
	}
	loss, dz := sentinel(1), sentinel(1)
	launch(t, "softmax_cross_entropy", 0, 256, []float32(nil), []float32(nil), loss, dz, 0, 5, float32(1))
	closeTo(t, "softmax_cross_entropy of no rows", loss, nil, 0)
	loss = sentinel(2)
	launch(t, "softmax_cross_entropy", 1, 256, []float32(nil), []float32(nil), loss, dz, 1, 0, float32(1))
	closeTo(t, "softmax_cross_entropy of no classes", loss, []float32{-12345}, 0)
}

// TestMeanSquaredError: squared_difference_sum (summed and divided by n on the host) and
// squared_difference_backward against ops.MeanSquaredError and its gradients, on sizes below, across and
// far beyond a block, with sum_squares-style partial sums on fewer threads than values and more.
func TestMeanSquaredError(t *testing.T) {
	needHost(t)
	op := func(in []*G.Node) (*G.Node, error) { return ops.MeanSquaredError(in[0], in[1]) }
	for _, shape := range [][]int{{1, 1}, {3, 7}, {64, 512}, {257}, {8, 2048, 9}} {
		n := 1
		for _, d := range shape {
			n *= d
		}
		a, b := randn(40, n, 1), randn(41, n, 1)
		want := cpuForward(t, op, dense(a, shape...), dense(b, shape...))
		const g = 0.75
		grads := cpuGrad(t, op, []float32{g}, dense(a, shape...), dense(b, shape...))
		for _, threads := range []int{1, 300, 4096} {
			partial := make([]float64, threads)
			launch(t, "squared_difference_sum", threads, 256, a, b, partial, n, threads)
			var sum float64
			for _, p := range partial {
				sum += p
			}
			mean := []float32{float32(sum / float64(n)), -12345}
			// gorgonia's Mean sums the float32 squares in float32, whose rounding grows with n (2.6e-5 at
			// 147,456 values); the kernel sums in double.
			closeTo(t, fmt.Sprintf("squared_difference_sum %v, %d threads", shape, threads), mean, want, 1e-4)
		}
		for _, block := range blocks {
			if block == 7 && n > 1<<16 {
				continue
			}
			da, db := sentinel(n+1), sentinel(n+1)
			launch(t, "squared_difference_backward", n, block, a, b, da, db, n, float32(2*g)/float32(n))
			closeTo(t, label("squared_difference_backward da", shape, block), da, grads[0], 1e-6)
			closeTo(t, label("squared_difference_backward db", shape, block), db, grads[1], 1e-6)
		}
	}
	d := sentinel(1)
	launch(t, "squared_difference_backward", 0, 256, d, d, d, d, 0, float32(1))
	closeTo(t, "squared_difference_backward of nothing", d, nil, 0)
}
