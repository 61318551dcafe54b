package cudakernels

import (
	"fmt"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/models/ops"
)

// cpuForward runs f of the CPU ops on leaf tensors holding ins and returns its output.
func cpuForward(t *testing.T, f func([]*G.Node) (*G.Node, error), ins ...*tensor.Dense) []float32 {
	t.Helper()
	g := G.NewGraph()
	y, err := f(leaves(g, ins))
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	if v, ok := y.Value().Data().(float32); ok { // a scalar
		return []float32{v}
	}
	return append([]float32(nil), y.Value().Data().([]float32)...)
}

// cpuGrad returns the gradient of Σ f(ins)⊙dy with respect to each input, by the CPU ops' own gradients.
func cpuGrad(t *testing.T, f func([]*G.Node) (*G.Node, error), dy []float32, ins ...*tensor.Dense) [][]float32 {
	t.Helper()
	g := G.NewGraph()
	in := leaves(g, ins)
	y, err := f(in)
	if err != nil {
		t.Fatal(err)
	}
	var cost *G.Node
	if y.IsScalar() {
		cost, err = G.Mul(y, G.NewScalar(g, tensor.Float32, G.WithValue(dy[0]), G.WithName("dy")))
	} else {
		r := G.NewTensor(g, tensor.Float32, y.Dims(), G.WithShape(y.Shape()...), G.WithName("dy"),
			G.WithValue(tensor.New(tensor.WithShape(y.Shape()...), tensor.WithBacking(dy))))
		var prod *G.Node
		if prod, err = G.HadamardProd(y, r); err == nil {
			cost, err = G.Sum(prod)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := G.Grad(cost, in...); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g, G.BindDualValues(in...))
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	grads := make([][]float32, len(in))
	for i, n := range in {
		gv, err := n.Grad()
		if err != nil {
			t.Fatal(err)
		}
		grads[i] = append([]float32(nil), gv.Data().([]float32)...)
	}
	return grads
}

func leaves(g *G.ExprGraph, ins []*tensor.Dense) []*G.Node {
	nodes := make([]*G.Node, len(ins))
	for i, v := range ins {
		v = v.Clone().(*tensor.Dense)
		nodes[i] = G.NewTensor(g, tensor.Float32, v.Dims(), G.WithShape(v.Shape()...), G.WithValue(v), G.WithName(string(rune('a'+i))))
	}
	return nodes
}

func dense(v []float32, shape ...int) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float32(nil), v...)))
}

// withSentinel returns a copy of v with one sentinel element after it.
func withSentinel(v []float32) []float32 { return append(append([]float32(nil), v...), sentinel(1)...) }

// TestElementwise: relu_forward, relu_backward, gelu_forward and gelu_backward against ops.ReLU and ops.GELU
// and their gradients, on sizes below, across and far beyond a block, and zero.
func TestElementwise(t *testing.T) {
	needHost(t)
	for _, n := range []int{0, 1, 255, 257, 1<<20 + 3} {
		x := randn(uint64(n), n, 3)
		dy := randn(uint64(n)+1, n, 1)
		if n > 2 {
			x[1] = 0 // ReLU's convention at 0
		}
		for _, block := range blocks {
			for _, k := range []struct {
				name string
				op   func([]*G.Node) (*G.Node, error)
				tol  float64
			}{
				{"relu", func(in []*G.Node) (*G.Node, error) { return ops.ReLU(in[0]) }, 0},
				// ops.GELU's float32 erf is its own approximation (within float32 rounding of math.Erf).
				{"gelu", func(in []*G.Node) (*G.Node, error) { return ops.GELU(in[0]) }, 1e-6},
			} {
				y := sentinel(n + 1)
				launch(t, k.name+"_forward", n, block, x, y, n)
				dx := sentinel(n + 1)
				saved := x
				if k.name == "relu" {
					saved = y
				}
				launch(t, k.name+"_backward", n, block, saved, dy, dx, n)
				if n == 0 {
					closeTo(t, label(k.name+"_forward", []int{n}, block), y, nil, 0)
					closeTo(t, label(k.name+"_backward", []int{n}, block), dx, nil, 0)
					continue
				}
				if block == 7 && n > 1<<16 {
					continue // the large size once, with Launch's block
				}
				closeTo(t, label(k.name+"_forward", []int{n}, block), y, cpuForward(t, k.op, dense(x, n)), k.tol)
				closeTo(t, label(k.name+"_backward", []int{n}, block), dx, cpuGrad(t, k.op, dy, dense(x, n))[0], k.tol)
			}
		}
	}
}

// TestBiasAdd: channel_affine with a = 1 is ops.AddChannelBias, and channel_sum its bias gradient, for
// [N,C,H,W] and [N,C] inputs.
func TestBiasAdd(t *testing.T) {
	needHost(t)
	for _, shape := range [][]int{{3, 5, 7, 9}, {2, 3, 1, 1}, {5, 300}, {1, 1}, {0, 4}, {16, 64, 56, 56}} {
		n, c := shape[0], shape[1]
		s := 1
		for _, d := range shape[2:] {
			s *= d
		}
		total := n * c * s
		x, b, dy := randn(1, total, 2), randn(2, c, 1), randn(3, total, 1)
		ones := make([]float32, c)
		for i := range ones {
			ones[i] = 1
		}
		op := func(in []*G.Node) (*G.Node, error) { return ops.AddChannelBias(in[0], in[1]) }
		for _, block := range blocks {
			if block == 7 && total > 1<<16 {
				continue
			}
			y, db := sentinel(total+1), sentinel(c+1)
			launch(t, "channel_affine", total, block, x, ones, b, y, total, c, s, 0)
			launch(t, "channel_sum", c, block, dy, db, n, c, s)
			if total == 0 {
				closeTo(t, label("channel_affine", shape, block), y, nil, 0)
				want := make([]float32, c) // the sum over no rows
				closeTo(t, label("channel_sum", shape, block), db, want, 0)
				continue
			}
			closeTo(t, label("channel_affine", shape, block), y, cpuForward(t, op, dense(x, shape...), dense(b, c)), 0)
			closeTo(t, label("channel_sum", shape, block), db, cpuGrad(t, op, dy, dense(x, shape...), dense(b, c))[1], 1e-6)
		}
	}
}

// TestEvalBatchNorm: channel_affine with ops.BatchNorm.EvalAffine's coefficients is ops.BatchNorm's
// evaluation mode, with and without the fused ReLU, and bn_eval_backward_data and bn_eval_backward_params
// are its gradients with respect to x, γ and β.
func TestEvalBatchNorm(t *testing.T) {
	needHost(t)
	for _, shape := range [][]int{{3, 5, 7, 9}, {2, 3, 1, 1}, {4, 7}, {8, 64, 56, 56}} {
		n, c := shape[0], shape[1]
		s := 1
		for _, d := range shape[2:] {
			s *= d
		}
		total := n * c * s
		x, gamma, beta, dy := randn(4, total, 2), randn(5, c, 1), randn(6, c, 1), randn(11, total, 1)
		bn := ops.NewBatchNorm(c)
		bn.RunningMean = randn(7, c, 0.5)
		for i, v := range randn(8, c, 1) {
			bn.RunningVar[i] = v*v + 0.1
		}
		a, b, inv, err := bn.EvalAffine(gamma, beta)
		if err != nil {
			t.Fatal(err)
		}
		for _, relu := range []bool{false, true} {
			op := func(in []*G.Node) (*G.Node, error) { return bn.Apply(in[0], in[1], in[2], false, relu) }
			want := cpuForward(t, op, dense(x, shape...), dense(gamma, c), dense(beta, c))
			grads := cpuGrad(t, op, dy, dense(x, shape...), dense(gamma, c), dense(beta, c))
			flag := map[bool]int{false: 0, true: 1}[relu]
			for _, block := range blocks {
				if block == 7 && total > 1<<16 {
					continue
				}
				what := fmt.Sprintf("relu %t", relu)
				y := sentinel(total + 1)
				launch(t, "channel_affine", total, block, x, a, b, y, total, c, s, flag)
				// The CPU op multiplies and adds in one fused step where the CPU has FMA; the kernel rounds twice.
				closeTo(t, label("channel_affine (batch norm, "+what+")", shape, block), y, want, 1e-6)
				dx, dgamma, dbeta := sentinel(total+1), sentinel(c+1), sentinel(c+1)
				launch(t, "bn_eval_backward_data", total, block, dy, y, a, dx, total, c, s, flag)
				launch(t, "bn_eval_backward_params", c, block, x, y, dy, bn.RunningMean, inv, dgamma, dbeta, n, c, s, flag)
				closeTo(t, label("bn_eval_backward_data ("+what+")", shape, block), dx, grads[0], 1e-6)
				// The CPU op sums each run of S values in float32 (4e-7 off at [8 64 56 56]); the kernel in double.
				closeTo(t, label("bn_eval_backward_params dγ ("+what+")", shape, block), dgamma, grads[1], 4e-6)
				closeTo(t, label("bn_eval_backward_params dβ ("+what+")", shape, block), dbeta, grads[2], 4e-6)
			}
		}
	}
}

// TestGlobalAvgPool: global_avg_pool and global_avg_pool_grad against ops.GlobalAvgPool and its gradient.
func TestGlobalAvgPool(t *testing.T) {
	needHost(t)
	op := func(in []*G.Node) (*G.Node, error) { return ops.GlobalAvgPool(in[0]) }
	for _, shape := range [][]int{{2, 3, 5, 7}, {1, 1, 1, 1}, {3, 2, 1, 9}, {64, 512, 7, 7}, {8, 64, 56, 56}} {
		rows, s := shape[0]*shape[1], shape[2]*shape[3]
		total := rows * s
		x, dy := randn(9, total, 2), randn(10, rows, 1)
		want := cpuForward(t, op, dense(x, shape...))
		wantDx := cpuGrad(t, op, dy, dense(x, shape...))[0]
		for _, block := range blocks {
			if block == 7 && total > 1<<16 {
				continue
			}
			y, dx := sentinel(rows+1), sentinel(total+1)
			launch(t, "global_avg_pool", rows, block, x, y, rows, s)
			launch(t, "global_avg_pool_grad", total, block, dy, dx, total, s)
			closeTo(t, label("global_avg_pool", shape, block), y, want, 1e-6)
			closeTo(t, label("global_avg_pool_grad", shape, block), dx, wantDx, 1e-6)
		}
	}
	y, dx := sentinel(1), sentinel(1)
	launch(t, "global_avg_pool", 0, 7, []float32(nil), y, 0, 1)
	launch(t, "global_avg_pool_grad", 0, 7, []float32(nil), dx, 0, 1)
	closeTo(t, "global_avg_pool of nothing", y, nil, 0)
	closeTo(t, "global_avg_pool_grad of nothing", dx, nil, 0)
}
