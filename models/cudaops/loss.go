package cudaops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/models/cuda"
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
