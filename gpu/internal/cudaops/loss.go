package cudaops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/gpu/internal/cuda"
	"github.com/bicyc/bicyc/models/ops"
)

// CrossEntropy is ops.CrossEntropy computed by the softmax_cross_entropy kernel: the mean softmax
// cross-entropy of float32 logits [B,K] against targets [B,K] (one-hot rows, or any weights: the kernel
// weighs each class's log-probability by its target), a scalar, with its gradient with respect to the logits
// (the targets get none: they are data). Each row's loss comes back to the host, which sums the B values in
// double and divides by B.
func CrossEntropy(logits, targets *G.Node) (*G.Node, error) {
	ls, ts := logits.Shape(), targets.Shape()
	if ls.Dims() != 2 || ls.TotalSize() == 0 || logits.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("cuda cross-entropy: logits %q are %v %v, want float32 [B,K]: %w", logits.Name(), ls, logits.Dtype(), ops.ErrShape)
	}
	if !ts.Eq(ls) || targets.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("cuda cross-entropy: targets %q are %v %v, want float32 %v: %w", targets.Name(), ts, targets.Dtype(), ls, ops.ErrShape)
	}
	s := &ceState{shape: ls.Clone(), serial: serial.Add(1)}
	return G.ApplyOp(&ceOp{s: s}, logits, targets)
}

// ceState is what the loss and its gradient share: the kernel and the device copies of the logits, the
// targets, the row losses and the logits' gradient.
type ceState struct {
	shape          tensor.Shape
	serial         uint64
	run            uint64
	k              *cuda.Kernel
	z, t, loss, dz deviceTensor
}

func (s *ceState) ready() error {
	if s.k != nil {
		return nil
	}
	err := kernelsAndBuffers([]string{"softmax_cross_entropy"}, []**cuda.Kernel{&s.k},
		[]*deviceTensor{&s.z, &s.t, &s.loss, &s.dz}, []tensor.Shape{s.shape, s.shape, {s.shape[0]}, s.shape})
	if err != nil {
		s.k = nil
	}
	return err
}

// launch runs the kernel with the gradient scaled by scale/B.
func (s *ceState) launch(scale float32) error {
	rows, k := s.shape[0], s.shape[1]
	return s.k.Launch(rows, s.z.buf, s.t.buf, s.loss.buf, s.dz.buf, int32(rows), int32(k), scale/float32(rows))
}

// ceOp is the loss (grad false; inputs logits and targets) or its gradient with respect to the logits (grad
// true; inputs the logits, which order it after the loss, and the loss's scalar gradient).
type ceOp struct {
	s    *ceState
	grad bool
}

func (op *ceOp) Arity() int { return 2 }
func (op *ceOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	m := G.TensorType{Dims: 2, Of: a}
	if op.grad {
		return hm.NewFnType(m, a, m)
	}
	return hm.NewFnType(m, m, a)
}
func (op *ceOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if op.grad {
		return op.s.shape.Clone(), nil
	}
	return tensor.ScalarShape(), nil
}
func (op *ceOp) ReturnsPtr() bool      { return false }
func (op *ceOp) CallsExtern() bool     { return false }
func (op *ceOp) OverwritesInput() int  { return -1 }
func (op *ceOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *ceOp) Hashcode() uint32      { return hashOf(op) }
func (op *ceOp) String() string {
	if op.grad {
		return fmt.Sprintf("CUDA-cross-entropy-grad#%d%v", op.s.serial, op.s.shape)
	}
	return fmt.Sprintf("CUDA-cross-entropy#%d%v", op.s.serial, op.s.shape)
}
func (op *ceOp) DiffWRT(int) []bool { return []bool{!op.grad, false} }

func (op *ceOp) SymDiff(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	if op.grad {
		return nil, fmt.Errorf("%v: second derivatives are not implemented", op)
	}
	dz, err := G.ApplyOp(&ceOp{s: op.s, grad: true}, inputs[0], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dz, nil}, nil
}

func (op *ceOp) Do(vals ...G.Value) (G.Value, error) {
	s := op.s
	name := "cuda cross-entropy"
	if op.grad {
		name += " gradient"
	}
	if err := s.ready(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if op.grad {
		g, ok := vals[1].Data().(float32)
		if !ok {
			return nil, fmt.Errorf("%s: the loss's gradient is %T, want a float32 scalar: %w", name, vals[1].Data(), ops.ErrShape)
		}
		if s.run == 0 {
			return nil, fmt.Errorf("%s: the loss has not run", name)
		}
		if err := s.launch(g); err != nil {
			return nil, err
		}
		return s.dz.download(s.shape)
	}
	in := make([]*tensor.Dense, 2)
	for i, v := range vals {
		d, err := denseInput(name, i, v, tensor.Float32, s.shape)
		if err != nil {
			return nil, err
		}
		in[i] = d
	}
	s.run++
	if err := s.z.upload(in[0], s.run); err != nil {
		return nil, fmt.Errorf("%s: logits: %w", name, err)
	}
	if err := s.t.upload(in[1], s.run); err != nil {
		return nil, fmt.Errorf("%s: targets: %w", name, err)
	}
	if err := s.launch(1); err != nil {
		return nil, err
	}
	rows, err := s.loss.download(tensor.Shape{s.shape[0]})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var sum float64
	for _, v := range rows.Float32s() {
		sum += float64(v)
	}
	return G.NewF32(float32(sum / float64(s.shape[0]))), nil
}

func (op *ceOp) release() error {
	op.s.k = nil
	return freeAll(&op.s.z, &op.s.t, &op.s.loss, &op.s.dz)
}

// MeanSquaredError is ops.MeanSquaredError computed by NVRTC kernels: the mean of (a − b)² over all
// elements of two float32 tensors of one shape, a scalar (the partial sums of squared_difference_sum come
// back and the host adds them in double), with the gradients with respect to a and b
// (squared_difference_backward, both in one launch).
func MeanSquaredError(a, b *G.Node) (*G.Node, error) {
	as := a.Shape()
	if as.TotalSize() == 0 || as.Dims() == 0 || a.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("cuda mean squared error: %q is %v %v, want a float32 tensor: %w", a.Name(), as, a.Dtype(), ops.ErrShape)
	}
	if !b.Shape().Eq(as) || b.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("cuda mean squared error: %q is %v %v, want float32 %v as %q: %w", b.Name(), b.Shape(), b.Dtype(), as, a.Name(), ops.ErrShape)
	}
	s := &mseState{shape: as, n: as.TotalSize(), id: serial.Add(1)}
	s.threads = min(s.n, sumSquaresThreads)
	fwd := &mseOp{name: "cuda mean squared error", shape: as, serial: s.id, free: s.free, do: s.forward}
	fwd.diff = func(a, g *G.Node) (G.Nodes, error) {
		var out G.Nodes
		for _, op := range []*mseOp{s.gradOp("cuda mean squared error da", &s.da), s.gradOp("cuda mean squared error db", &s.db)} {
			d, err := G.ApplyOp(op, a, g)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
		return out, nil
	}
	return G.ApplyOp(fwd, a, b)
}

// mseState is the device state one MeanSquaredError shares with its gradient ops; the run counters let
// the two gradients share one launch.
type mseState struct {
	shape            tensor.Shape
	n, threads       int
	id               uint64
	sum, back        *cuda.Kernel
	ad, bd, da, db   deviceTensor
	partial          deviceTensor // the threads' partial sums, in double
	run, backwardRun uint64
}

func (s *mseState) free() error {
	s.sum, s.back = nil, nil
	return freeAll(&s.ad, &s.bd, &s.da, &s.db, &s.partial)
}

// ready compiles the kernels and allocates the buffers on the first run.
func (s *mseState) ready() error {
	if s.sum != nil {
		return nil
	}
	r, err := cuda.Open()
	if err != nil {
		return err
	}
	if err := s.partial.alloc(r, tensor.Float64, tensor.Shape{s.threads}); err != nil {
		return err
	}
	err = kernelsAndBuffers([]string{"squared_difference_sum", "squared_difference_backward"}, []**cuda.Kernel{&s.sum, &s.back},
		[]*deviceTensor{&s.ad, &s.bd, &s.da, &s.db}, []tensor.Shape{s.shape, s.shape, s.shape, s.shape})
	if err != nil {
		s.sum = nil
	}
	return err
}

// forward uploads a and b, and adds the kernel's partial sums on the host.
func (s *mseState) forward(vals []G.Value) (G.Value, error) {
	in := make([]*tensor.Dense, 2)
	for i, v := range vals {
		d, err := denseInput("input", i, v, tensor.Float32, s.shape)
		if err != nil {
			return nil, err
		}
		in[i] = d
	}
	if err := s.ready(); err != nil {
		return nil, err
	}
	s.run++
	for i, d := range []*deviceTensor{&s.ad, &s.bd} {
		if err := d.upload(in[i], s.run); err != nil {
			return nil, err
		}
	}
	if err := s.sum.Launch(s.threads, s.ad.buf, s.bd.buf, s.partial.buf, int32(s.n), int32(s.threads)); err != nil {
		return nil, err
	}
	sums, err := s.partial.download(tensor.Shape{s.threads})
	if err != nil {
		return nil, err
	}
	var total float64
	for _, v := range sums.Float64s() {
		total += v
	}
	return G.NewF32(float32(total / float64(s.n))), nil
}

// gradOp is the gradient op of a (out da) or b (out db): inputs a and the loss's scalar gradient.
func (s *mseState) gradOp(name string, out *deviceTensor) *mseOp {
	return &mseOp{name: name, shape: s.shape, serial: s.id, free: s.free, grad: true,
		do: func(vals []G.Value) (G.Value, error) {
			g, ok := vals[1].Data().(float32)
			if !ok {
				return nil, fmt.Errorf("the loss's gradient is %T, want a float32 scalar: %w", vals[1].Data(), ops.ErrShape)
			}
			if s.sum == nil || s.run == 0 {
				return nil, fmt.Errorf("the loss has not run")
			}
			if s.backwardRun != s.run {
				if err := s.back.Launch(s.n, s.ad.buf, s.bd.buf, s.da.buf, s.db.buf, int32(s.n), 2*g/float32(s.n)); err != nil {
					return nil, err
				}
				s.backwardRun = s.run
			}
			return out.download(s.shape)
		}}
}

// mseOp is the mean squared error (inputs a and b, a scalar out) or one of its gradients (inputs a, which
// orders it after the loss, and the loss's scalar gradient; out da or db).
type mseOp struct {
	name   string
	shape  tensor.Shape
	serial uint64
	grad   bool
	do     func([]G.Value) (G.Value, error)
	diff   func(a, g *G.Node) (G.Nodes, error)
	free   func() error
}

func (op *mseOp) Arity() int { return 2 }
func (op *mseOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	t := G.TensorType{Dims: op.shape.Dims(), Of: a}
	if op.grad {
		return hm.NewFnType(t, a, t)
	}
	return hm.NewFnType(t, t, a)
}
func (op *mseOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if op.grad {
		return op.shape.Clone(), nil
	}
	return tensor.ScalarShape(), nil
}
func (op *mseOp) ReturnsPtr() bool      { return false }
func (op *mseOp) CallsExtern() bool     { return false }
func (op *mseOp) OverwritesInput() int  { return -1 }
func (op *mseOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *mseOp) Hashcode() uint32      { return hashOf(op) }
func (op *mseOp) String() string        { return fmt.Sprintf("%s#%d%v", op.name, op.serial, op.shape) }
func (op *mseOp) DiffWRT(int) []bool    { return []bool{!op.grad, !op.grad} }
func (op *mseOp) SymDiff(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	if op.grad {
		return nil, fmt.Errorf("%v: second derivatives are not implemented", op)
	}
	return op.diff(inputs[0], grad)
}
func (op *mseOp) Do(vals ...G.Value) (G.Value, error) {
	v, err := op.do(vals)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.name, err)
	}
	return v, nil
}
func (op *mseOp) release() error { return op.free() }
