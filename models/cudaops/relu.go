package cudaops

import (
	"fmt"
	"hash"
	"sync"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/models/cuda"
	"github.com/bicyc/bicyc/models/ops"
)

// The kernel sources, one per op and direction, compiled by NVRTC on first use.
const (
	reluForwardSource = `extern "C" __global__ void relu_forward(const float* x, float* y, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}`
	// The gradient is 1 where the output is positive, 0 elsewhere (ops.ReLU's convention at 0).
	reluBackwardSource = `extern "C" __global__ void relu_backward(const float* y, const float* dy, float* dx, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}`
)

// compiled holds each kernel, compiled once per process.
var compiled struct {
	mu    sync.Mutex
	byKey map[string]*cuda.Kernel
}

func kernel(r *cuda.Runtime, name, source string) (*cuda.Kernel, error) {
	compiled.mu.Lock()
	defer compiled.mu.Unlock()
	if k, ok := compiled.byKey[name]; ok {
		return k, nil
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
func ReLU(x *G.Node) (*G.Node, error) {
	if x.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("cuda relu: %q is %v, want float32: %w", x.Name(), x.Dtype(), ops.ErrShape)
	}
	if x.Shape().TotalSize() == 0 {
		return nil, fmt.Errorf("cuda relu: %q is empty: %w", x.Name(), ops.ErrShape)
	}
	s := &reluState{shape: x.Shape().Clone(), serial: serial.Add(1)}
	return G.ApplyOp(&reluOp{s: s}, x)
}

// reluState is what the forward op and its gradient share: the device copies of x, y, dy and dx; the
// gradient reads the y the forward op left on the device.
type reluState struct {
	shape        tensor.Shape
	serial       uint64
	run          uint64
	fwd, bwd     *cuda.Kernel
	x, y, dy, dx deviceTensor
}

func (s *reluState) ready() error {
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
	if s.bwd, err = kernel(r, "relu_backward", reluBackwardSource); err != nil {
		return err
	}
	s.fwd, err = kernel(r, "relu_forward", reluForwardSource)
	return err
}

// reluOp is the forward ReLU (grad false) or its gradient (grad true, inputs y and dy).
type reluOp struct {
	s    *reluState
	grad bool
}

func (op *reluOp) Arity() int {
	if op.grad {
		return 2
	}
	return 1
}
func (op *reluOp) Type() hm.Type {
	t := tensorType(len(op.s.shape))
	if op.grad {
		return hm.NewFnType(t, t, t)
	}
	return hm.NewFnType(t, t)
}
func (op *reluOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.s.shape.Clone(), nil }
func (op *reluOp) ReturnsPtr() bool                               { return false }
func (op *reluOp) CallsExtern() bool                              { return false }
func (op *reluOp) OverwritesInput() int                           { return -1 }
func (op *reluOp) WriteHash(h hash.Hash)                          { fmt.Fprint(h, op.String()) }
func (op *reluOp) Hashcode() uint32                               { return hashOf(op) }
func (op *reluOp) String() string {
	if op.grad {
		return fmt.Sprintf("CUDAReLUGrad#%d%v", op.s.serial, op.s.shape)
	}
	return fmt.Sprintf("CUDAReLU#%d%v", op.s.serial, op.s.shape)
}
func (op *reluOp) DiffWRT(int) []bool { return []bool{!op.grad} }

func (op *reluOp) SymDiff(_ G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if op.grad {
		return nil, fmt.Errorf("%v: second derivatives are not implemented", op)
	}
	dx, err := G.ApplyOp(&reluOp{s: op.s, grad: true}, output, grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx}, nil
}

func (op *reluOp) Do(vals ...G.Value) (G.Value, error) {
	s := op.s
	name := "cuda relu"
	if op.grad {
		name = "cuda relu gradient"
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
	if err := s.bwd.Launch(int(n), s.y.buf, s.dy.buf, s.dx.buf, n); err != nil {
		return nil, err
	}
	return s.dx.download(s.shape)
}
