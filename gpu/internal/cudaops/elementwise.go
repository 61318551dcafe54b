package cudaops

import (
	"fmt"
	"hash"
	"sync"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/gpu/internal/cuda"
	"github.com/bicyc/bicyc/gpu/internal/cudakernels"
	"github.com/bicyc/bicyc/models/ops"
)

// elementwise is a float32 op computed by two kernels NVRTC compiles at run time (their sources in package
// gpu/internal/cudakernels): forward(x, y, n) and backward(saved, dy, dx, n), where saved is the forward's input x
// or output y, left on the device by the forward op.
type elementwise struct {
	name                  string // "relu"
	forwardFn, backwardFn string // the kernels' names
	backwardReadsOutput   bool   // saved is y (else x)
}

var (
	reluKernels = elementwise{name: "relu", forwardFn: "relu_forward", backwardFn: "relu_backward", backwardReadsOutput: true}
	geluKernels = elementwise{name: "gelu", forwardFn: "gelu_forward", backwardFn: "gelu_backward"}
)

// compiled holds each kernel, compiled once per process.
var compiled struct {
	mu    sync.Mutex
	byKey map[string]*cuda.Kernel
}

// kernel returns the kernel called name, compiled from its source in package cudakernels on first use.
func kernel(r *cuda.Runtime, name string) (*cuda.Kernel, error) {
	compiled.mu.Lock()
	defer compiled.mu.Unlock()
	if k, ok := compiled.byKey[name]; ok {
		return k, nil
	}
	source, err := cudakernels.Source(name)
	if err != nil {
		return nil, err
	}
	k, err := r.Compile(name, source)
	if err != nil {
		return nil, err
	}
	if compiled.byKey == nil {
		compiled.byKey = map[string]*cuda.Kernel{}
	}
	compiled.byKey[name] = k
	return k, nil
}

// ReLU is ops.ReLU computed by a kernel NVRTC compiles at run time: max(x, 0) element-wise, for a float32
// tensor of any shape, with gradient 1 where the output is positive and 0 elsewhere.
func ReLU(x *G.Node) (*G.Node, error) { return applyElementwise(reluKernels, x) }

// GELU is ops.GELU (the exact GELU, with erf) computed by a kernel NVRTC compiles at run time, for a float32
// tensor of any shape; its gradient reads the input the forward op left on the device.
func GELU(x *G.Node) (*G.Node, error) { return applyElementwise(geluKernels, x) }

func applyElementwise(k elementwise, x *G.Node) (*G.Node, error) {
	if x.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("cuda %s: %q is %v, want float32: %w", k.name, x.Name(), x.Dtype(), ops.ErrShape)
	}
	if x.Shape().TotalSize() == 0 {
		return nil, fmt.Errorf("cuda %s: %q is empty: %w", k.name, x.Name(), ops.ErrShape)
	}
	s := &unaryState{k: k, shape: x.Shape().Clone(), serial: serial.Add(1)}
	return G.ApplyOp(&unaryOp{s: s}, x)
}

// unaryState is what the forward op and its gradient share: the device copies of x, y, dy and dx; the
// gradient reads the x or y the forward op left on the device.
type unaryState struct {
	k            elementwise
	shape        tensor.Shape
	serial       uint64
	run          uint64
	fwd, bwd     *cuda.Kernel
	x, y, dy, dx deviceTensor
}

func (s *unaryState) ready() error {
	if s.fwd != nil {
		return nil
	}
	r, err := cuda.Open()
	if err != nil {
		return err
	}
	for _, d := range []*deviceTensor{&s.x, &s.y, &s.dy, &s.dx} {
		if err := d.alloc(r, tensor.Float32, s.shape); err != nil {
			return err
		}
	}
	if s.bwd, err = kernel(r, s.k.backwardFn); err != nil {
		return err
	}
	s.fwd, err = kernel(r, s.k.forwardFn)
	return err
}

// unaryOp is the forward element-wise op (grad false) or its gradient (grad true, inputs y and dy; the kernel
// reads what it needs from the device).
type unaryOp struct {
	s    *unaryState
	grad bool
}

func (op *unaryOp) Arity() int {
	if op.grad {
		return 2
	}
	return 1
}
func (op *unaryOp) Type() hm.Type {
	t := tensorType(len(op.s.shape))
	if op.grad {
		return hm.NewFnType(t, t, t)
	}
	return hm.NewFnType(t, t)
}
func (op *unaryOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.s.shape.Clone(), nil }
func (op *unaryOp) ReturnsPtr() bool                               { return false }
func (op *unaryOp) CallsExtern() bool                              { return false }
func (op *unaryOp) OverwritesInput() int                           { return -1 }
func (op *unaryOp) WriteHash(h hash.Hash)                          { fmt.Fprint(h, op.String()) }
func (op *unaryOp) Hashcode() uint32                               { return hashOf(op) }
func (op *unaryOp) String() string {
	if op.grad {
		return fmt.Sprintf("CUDA-%s-grad#%d%v", op.s.k.name, op.s.serial, op.s.shape)
	}
	return fmt.Sprintf("CUDA-%s#%d%v", op.s.k.name, op.s.serial, op.s.shape)
}
func (op *unaryOp) DiffWRT(int) []bool { return []bool{!op.grad} }

func (op *unaryOp) SymDiff(_ G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if op.grad {
		return nil, fmt.Errorf("%v: second derivatives are not implemented", op)
	}
	dx, err := G.ApplyOp(&unaryOp{s: op.s, grad: true}, output, grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx}, nil
}

func (op *unaryOp) Do(vals ...G.Value) (G.Value, error) {
	s := op.s
	name := "cuda " + s.k.name
	if op.grad {
		name += " gradient"
	}
	in := make([]*tensor.Dense, len(vals))
	for i, v := range vals {
		d, err := denseInput(name, i, v, tensor.Float32, s.shape)
		if err != nil {
			return nil, err
		}
		in[i] = d
	}
	if err := s.ready(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	n := int32(s.shape.TotalSize())
	if !op.grad {
		s.run++
		if err := s.x.upload(in[0], s.run); err != nil {
			return nil, fmt.Errorf("%s: x: %w", name, err)
		}
		if err := s.fwd.Launch(int(n), s.x.buf, s.y.buf, n); err != nil {
			return nil, err
		}
		return s.y.download(s.shape)
	}
	if err := s.dy.upload(in[1], s.run); err != nil {
		return nil, fmt.Errorf("%s: dy: %w", name, err)
	}
	saved := s.x.buf
	if s.k.backwardReadsOutput {
		saved = s.y.buf
	}
	if err := s.bwd.Launch(int(n), saved, s.dy.buf, s.dx.buf, n); err != nil {
		return nil, err
	}
	return s.dx.download(s.shape)
}
