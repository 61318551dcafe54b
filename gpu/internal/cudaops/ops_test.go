package cudaops

import (
	"errors"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/gpu/internal/cuda"
	"github.com/bicyc/bicyc/models/ops"
)

// TestGraphShapes: the GPU ops build into a graph, with its gradients, without a GPU: the output and every
// gradient have the shapes and dtype of the CPU ops'.
func TestGraphShapes(t *testing.T) {
	for i, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		g := G.NewGraph()
		x0 := G.NewTensor(g, dt, 4, G.WithShape(8, 3, 32, 32), G.WithName("x"))
		x, err := G.Mul(x0, G.NewConstant(1.0))
		if dt == tensor.Float32 {
			x, err = G.Mul(x0, G.NewConstant(float32(1)))
		}
		if err != nil {
			t.Fatal(err)
		}
		w := G.NewTensor(g, dt, 4, G.WithShape(16, 3, 7, 7), G.WithName("w"))
		y, err := Conv2d(x, w, 2, 3)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if want := (tensor.Shape{8, 16, 16, 16}); !y.Shape().Eq(want) || y.Dtype() != dt {
			t.Errorf("case %d: conv output %v %v, want %v %v", i, y.Shape(), y.Dtype(), want, dt)
		}
		// the same layer on the CPU ops gives the same shape
		yc, err := ops.Conv2d(x, w, 2, 3)
		if err != nil || !yc.Shape().Eq(y.Shape()) {
			t.Errorf("case %d: ops.Conv2d gives %v (%v), cuda %v", i, yc.Shape(), err, y.Shape())
		}
		flat, err := G.Reshape(y, tensor.Shape{8, 16 * 16 * 16})
		if err != nil {
			t.Fatal(err)
		}
		b := G.NewTensor(g, dt, 2, G.WithShape(16*16*16, 10), G.WithName("b"))
		z, err := MatMul(flat, b)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if want := (tensor.Shape{8, 10}); !z.Shape().Eq(want) || z.Dtype() != dt {
			t.Errorf("case %d: matmul output %v %v, want %v %v", i, z.Shape(), z.Dtype(), want, dt)
		}
		loss, err := G.Sum(z)
		if err != nil {
			t.Fatal(err)
		}
		grads, err := G.Grad(loss, x0, w, b)
		if err != nil {
			t.Fatalf("case %d: G.Grad: %v", i, err)
		}
		for j, want := range []tensor.Shape{{8, 3, 32, 32}, {16, 3, 7, 7}, {16 * 16 * 16, 10}} {
			if !grads[j].Shape().Eq(want) || grads[j].Dtype() != dt {
				t.Errorf("case %d: gradient %d is %v %v, want %v %v", i, j, grads[j].Shape(), grads[j].Dtype(), want, dt)
			}
		}
		// x0 is a leaf: the convolution of it builds no input gradient, as ops.Conv2d.
		if _, err := Conv2d(x0, w, 2, 3); err != nil {
			t.Fatal(err)
		}
	}
}

// TestShapeErrors: shapes that do not fit are refused when the graph is built, wrapping ops.ErrShape.
func TestShapeErrors(t *testing.T) {
	g := G.NewGraph()
	node := func(dt tensor.Dtype, shape ...int) *G.Node {
		return G.NewTensor(g, dt, len(shape), G.WithShape(shape...))
	}
	f32, f64 := tensor.Float32, tensor.Float64
	convs := []struct {
		x, w        *G.Node
		stride, pad int
		want        string
	}{
		{node(f32, 2, 3, 8), node(f32, 4, 3, 3, 3), 1, 1, "want [N,C,H,W]"},
		{node(f32, 2, 3, 8, 8), node(f32, 4, 3, 3, 2), 1, 1, "want [O,C,K,K]"},
		{node(f32, 2, 3, 8, 8), node(f32, 4, 5, 3, 3), 1, 1, "input channels"},
		{node(f32, 2, 3, 8, 8), node(f64, 4, 3, 3, 3), 1, 1, "is float64"},
		{node(f32, 2, 3, 8, 8), node(f32, 4, 3, 3, 3), 0, 1, "want stride >= 1"},
		{node(f32, 2, 3, 2, 2), node(f32, 4, 3, 5, 5), 1, 0, "does not fit"},
		{node(tensor.Int, 2, 3, 8, 8), node(tensor.Int, 4, 3, 3, 3), 1, 1, "want float32 or float64"},
	}
	for i, c := range convs {
		_, err := Conv2d(c.x, c.w, c.stride, c.pad)
		if !errors.Is(err, ops.ErrShape) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("conv case %d: error %v, want one wrapping ErrShape with %q", i, err, c.want)
		}
	}
	mats := []struct {
		a, b *G.Node
		want string
	}{
		{node(f32, 2, 3, 4), node(f32, 4, 5), "must be matrices"},
		{node(f32, 2, 3), node(f32, 4, 5), "do not chain"},
		{node(f32, 2, 3), node(f64, 3, 5), "want both float32"},
	}
	for i, c := range mats {
		_, err := MatMul(c.a, c.b)
		if !errors.Is(err, ops.ErrShape) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("matmul case %d: error %v, want one wrapping ErrShape with %q", i, err, c.want)
		}
	}
}

// TestRunWithoutCUDA: a graph of GPU ops run where CUDA cannot load fails with the loader's explanation
// instead of computing anything.
func TestRunWithoutCUDA(t *testing.T) {
	if _, err := cuda.Open(); err == nil {
		t.Skip("CUDA is available here: TestCheck covers the run")
	}
	g := G.NewGraph()
	a := G.NewTensor(g, tensor.Float32, 2, G.WithShape(2, 3), G.WithInit(G.Ones()))
	b := G.NewTensor(g, tensor.Float32, 2, G.WithShape(3, 4), G.WithInit(G.Ones()))
	c, err := MatMul(a, b)
	if err != nil {
		t.Fatal(err)
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	err = m.RunAll()
	if err == nil {
		t.Fatalf("RunAll succeeded without CUDA: %v", c.Value())
	}
	if !errUnavailable(err) && !strings.Contains(err.Error(), "cuda: cannot load") {
		t.Errorf("error %v does not say CUDA is unavailable", err)
	}
	t.Log(err)
	w := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float32{1, 2, 3}))
	dw := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float32{1, 1, 1}))
	err = (&SGD{LR: 0.1}).Step([]G.ValueGrad{valueGrad{w: w, g: dw}})
	if !errUnavailable(err) || w.Float32s()[0] != 1 || dw.Float32s()[0] != 1 {
		t.Errorf("SGD without CUDA: error %v, weights %v, gradient %v (want unavailable and both untouched)", err, w.Float32s(), dw.Float32s())
	}
}

// TestNVRTCLayerShapes: the NVRTC ops' shapes and gradients (bias, average pooling, evaluation-mode batch
// norm, cross-entropy and mean squared error, chained) are built without a GPU, and inputs they
// cannot take are refused when the graph is built, wrapping ops.ErrShape.
func TestNVRTCLayerShapes(t *testing.T) {
	g := G.NewGraph()
	node := func(dt tensor.Dtype, shape ...int) *G.Node {
		return G.NewTensor(g, dt, len(shape), G.WithShape(shape...))
	}
	x := node(tensor.Float32, 2, 3, 5, 7)
	b := node(tensor.Float32, 3)
	y, err := AddChannelBias(G.Must(G.Mul(x, G.NewConstant(float32(1)))), b)
	if err != nil {
		t.Fatal(err)
	}
	p, err := GlobalAvgPool(y)
	if err != nil {
		t.Fatal(err)
	}
	if !y.Shape().Eq(tensor.Shape{2, 3, 5, 7}) || !p.Shape().Eq(tensor.Shape{2, 3}) {
		t.Errorf("shapes %v, %v", y.Shape(), p.Shape())
	}
	gamma, beta := node(tensor.Float32, 3), node(tensor.Float32, 3)
	nrm, err := BatchNormEval(ops.NewBatchNorm(3), p, gamma, beta, true)
	if err != nil {
		t.Fatal(err)
	}
	ce, err := CrossEntropy(nrm, node(tensor.Float32, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	sq, err := MeanSquaredError(nrm, node(tensor.Float32, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	if ce, err = G.Add(ce, sq); err != nil {
		t.Fatal(err)
	}
	if !ce.IsScalar() {
		t.Errorf("cross-entropy shape %v", ce.Shape())
	}
	grads, err := G.Grad(ce, x, b, gamma, beta)
	if err != nil {
		t.Fatal(err)
	}
	if !grads[0].Shape().Eq(x.Shape()) || !grads[1].Shape().Eq(b.Shape()) || !grads[2].Shape().Eq(gamma.Shape()) || !grads[3].Shape().Eq(beta.Shape()) {
		t.Errorf("gradient shapes %v, %v, %v, %v", grads[0].Shape(), grads[1].Shape(), grads[2].Shape(), grads[3].Shape())
	}
	for i, c := range []struct {
		build func() (*G.Node, error)
		want  string
	}{
		{func() (*G.Node, error) { return AddChannelBias(node(tensor.Float32, 2, 3, 4), node(tensor.Float32, 3)) }, "want float32 [N,C,H,W] or [N,C]"},
		{func() (*G.Node, error) { return AddChannelBias(node(tensor.Float32, 2, 3), node(tensor.Float32, 4)) }, "want float32 [3]"},
		{func() (*G.Node, error) { return AddChannelBias(node(tensor.Float64, 2, 3), node(tensor.Float64, 3)) }, "want float32"},
		{func() (*G.Node, error) { return GlobalAvgPool(node(tensor.Float32, 2, 3)) }, "want float32 [N,C,H,W]"},
		{func() (*G.Node, error) { return GlobalAvgPool(node(tensor.Float64, 2, 3, 4, 4)) }, "want float32 [N,C,H,W]"},
		{func() (*G.Node, error) {
			return CrossEntropy(node(tensor.Float32, 2, 3, 4), node(tensor.Float32, 2, 3, 4))
		}, "want float32 [B,K]"},
		{func() (*G.Node, error) { return CrossEntropy(node(tensor.Float32, 2, 3), node(tensor.Float32, 2, 4)) }, "want float32 (2, 3)"},
		{func() (*G.Node, error) {
			return BatchNormEval(ops.NewBatchNorm(4), node(tensor.Float32, 2, 3, 5, 5), node(tensor.Float32, 4), node(tensor.Float32, 4), false)
		}, "has 3 channels, layer has 4"},
		{func() (*G.Node, error) {
			return BatchNormEval(ops.NewBatchNorm(3), node(tensor.Float32, 2, 3, 5, 5), node(tensor.Float32, 4), node(tensor.Float32, 3), false)
		}, "want [3] float32"},
	} {
		if _, err := c.build(); !errors.Is(err, ops.ErrShape) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: error %v, want one wrapping ErrShape with %q", i, err, c.want)
		}
	}
}

// TestReLUGraph: the NVRTC ReLU (and GELU) builds with its gradient without a GPU, and refuses what its float32 kernel
// cannot take.
func TestReLUGraph(t *testing.T) {
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(2, 3, 4, 5), G.WithName("x"))
	y, err := ReLU(x)
	if err != nil {
		t.Fatal(err)
	}
	loss, err := G.Sum(y)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := G.Grad(loss, x)
	if err != nil {
		t.Fatal(err)
	}
	if !y.Shape().Eq(x.Shape()) || !grads[0].Shape().Eq(x.Shape()) {
		t.Errorf("relu %v, gradient %v, want %v", y.Shape(), grads[0].Shape(), x.Shape())
	}
	x64 := G.NewTensor(g, tensor.Float64, 2, G.WithShape(2, 3), G.WithName("x64"))
	if _, err := ReLU(x64); !errors.Is(err, ops.ErrShape) {
		t.Errorf("float64 relu: %v, want an error wrapping ErrShape", err)
	}
	if _, err := GELU(x64); !errors.Is(err, ops.ErrShape) {
		t.Errorf("float64 gelu: %v, want an error wrapping ErrShape", err)
	}
	h, err := GELU(x)
	if err != nil || !h.Shape().Eq(x.Shape()) {
		t.Errorf("gelu: %v %v", h, err)
	}
}

// TestMaxPoolGraph: the cuDNN max pooling builds with its gradient without a GPU, with ops.MaxPool's
// output shape, and refuses ops.MaxPool's bad geometries.
func TestMaxPoolGraph(t *testing.T) {
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(2, 4, 112, 112), G.WithName("x"))
	y, err := MaxPool(x, 3, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	yc, err := ops.MaxPool(x, 3, 2, 1)
	if err != nil || !yc.Shape().Eq(y.Shape()) || !y.Shape().Eq(tensor.Shape{2, 4, 56, 56}) {
		t.Errorf("cuda max pool %v, ops.MaxPool %v (%v), want (2, 4, 56, 56)", y.Shape(), yc.Shape(), err)
	}
	loss, err := G.Sum(y)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := G.Grad(loss, x)
	if err != nil || !grads[0].Shape().Eq(x.Shape()) {
		t.Fatalf("gradient %v: %v", grads, err)
	}
	for i, c := range []struct{ k, stride, pad int }{{3, 2, 2}, {0, 1, 0}, {2, 0, 0}} {
		if _, err := MaxPool(x, c.k, c.stride, c.pad); !errors.Is(err, ops.ErrShape) {
			t.Errorf("case %d %+v: error %v, want one wrapping ErrShape", i, c, err)
		}
	}
}

// TestReleaseWithoutRun: releasing a graph whose GPU ops never ran (or ran without CUDA) frees nothing and
// fails nothing, twice.
func TestReleaseWithoutRun(t *testing.T) {
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(2, 3, 8, 8), G.WithName("x"))
	w := G.NewTensor(g, tensor.Float32, 4, G.WithShape(4, 3, 3, 3), G.WithName("w"))
	y, err := Conv2d(x, w, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := MaxPool(y, 2, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := GELU(p)
	if err != nil {
		t.Fatal(err)
	}
	flat, err := G.Reshape(r, tensor.Shape{2, 4 * 4 * 4})
	if err != nil {
		t.Fatal(err)
	}
	b := G.NewTensor(g, tensor.Float32, 2, G.WithShape(64, 5), G.WithName("b"))
	z, err := MatMul(flat, b)
	if err != nil {
		t.Fatal(err)
	}
	loss, err := G.Sum(z)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := G.Grad(loss, w, b); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := Release(g); err != nil {
			t.Errorf("release %d: %v", i, err)
		}
	}
}

// TestBatchNormGraph: the cuDNN batch norm builds with its three gradients without a GPU, and refuses what
// it does not run (another rank or dtype, mismatched channels, parameters of the wrong size).
func TestBatchNormGraph(t *testing.T) {
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(2, 3, 4, 4), G.WithName("x"))
	gamma := G.NewTensor(g, tensor.Float32, 1, G.WithShape(3), G.WithName("gamma"))
	beta := G.NewTensor(g, tensor.Float32, 1, G.WithShape(3), G.WithName("beta"))
	y, err := BatchNorm(ops.NewBatchNorm(3), x, gamma, beta)
	if err != nil {
		t.Fatal(err)
	}
	loss, err := G.Sum(y)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := G.Grad(loss, x, gamma, beta)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []tensor.Shape{{2, 3, 4, 4}, {3}, {3}} {
		if !grads[i].Shape().Eq(want) {
			t.Errorf("gradient %d: %v, want %v", i, grads[i].Shape(), want)
		}
	}
	x2 := G.NewTensor(g, tensor.Float32, 2, G.WithShape(2, 3), G.WithName("x2"))
	x64 := G.NewTensor(g, tensor.Float64, 4, G.WithShape(2, 3, 4, 4), G.WithName("x64"))
	one := G.NewTensor(g, tensor.Float32, 4, G.WithShape(1, 3, 1, 1), G.WithName("one"))
	short := G.NewTensor(g, tensor.Float32, 1, G.WithShape(2), G.WithName("short"))
	for i, c := range []struct {
		bn             *ops.BatchNorm
		x, gamma, beta *G.Node
	}{
		{ops.NewBatchNorm(3), x2, gamma, beta},
		{ops.NewBatchNorm(3), x64, gamma, beta},
		{ops.NewBatchNorm(4), x, gamma, beta},
		{ops.NewBatchNorm(3), one, gamma, beta},
		{ops.NewBatchNorm(3), x, short, beta},
	} {
		if _, err := BatchNorm(c.bn, c.x, c.gamma, c.beta); !errors.Is(err, ops.ErrShape) {
			t.Errorf("case %d: error %v, want one wrapping ErrShape", i, err)
		}
	}
}

// errUnavailable reports whether err says CUDA could not be used.
func errUnavailable(err error) bool { return errors.Is(err, cuda.ErrUnavailable) }

// valueGrad is a parameter and its gradient, as a graph hands them to a solver.
type valueGrad struct{ w, g *tensor.Dense }

func (p valueGrad) Value() G.Value         { return p.w }
func (p valueGrad) Grad() (G.Value, error) { return p.g, nil }
