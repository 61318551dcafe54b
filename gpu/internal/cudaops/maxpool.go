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

// MaxPool is ops.MaxPool computed by cuDNN (CUDNN_POOLING_MAX_DETERMINISTIC): the maximum of each k x k
// window of x [N,C,H,W] with the given stride and padding (padding never wins), and its gradient, which goes
// to each window's maximum. pad must be at most k/2. Where a window holds equal maxima cuDNN may pick
// another one than ops.MaxPool (the first in row-major order); elsewhere the two agree exactly.
func MaxPool(x *G.Node, k, stride, pad int) (*G.Node, error) {
	xs := x.Shape()
	switch {
	case k < 1 || stride < 1 || pad < 0 || 2*pad > k:
		return nil, fmt.Errorf("cuda max pool: kernel %d, stride %d, pad %d: want kernel, stride >= 1 and 0 <= pad <= kernel/2: %w", k, stride, pad, ops.ErrShape)
	case xs.Dims() != 4 || xs.TotalSize() == 0 || xs[2]+2*pad < k || xs[3]+2*pad < k:
		return nil, fmt.Errorf("cuda max pool %dx%d: input %q has shape %v, want [N,C,H,W] with H, W >= %d: %w", k, k, x.Name(), xs, k-2*pad, ops.ErrShape)
	case x.Dtype() != tensor.Float32 && x.Dtype() != tensor.Float64:
		return nil, fmt.Errorf("cuda max pool: %q is %v, want float32 or float64: %w", x.Name(), x.Dtype(), ops.ErrShape)
	}
	s := &poolState{
		shape:  cuda.PoolShape{N: xs[0], C: xs[1], H: xs[2], W: xs[3], K: k, Stride: stride, Pad: pad},
		dt:     x.Dtype(),
		serial: serial.Add(1),
	}
	return G.ApplyOp(&poolOp{s: s}, x)
}

// poolState is what the forward op and its gradient share: the descriptors and the device copies of x, y,
// dy and dx; the gradient reads the x and y the forward op left on the device.
type poolState struct {
	shape        cuda.PoolShape
	dt           tensor.Dtype
	serial       uint64
	run          uint64
	pool         *cuda.Pool
	x, y, dy, dx deviceTensor
}

func (s *poolState) inShape() tensor.Shape {
	return tensor.Shape{s.shape.N, s.shape.C, s.shape.H, s.shape.W}
}
func (s *poolState) outShape() tensor.Shape {
	oh, ow := s.shape.Out()
	return tensor.Shape{s.shape.N, s.shape.C, oh, ow}
}

func (s *poolState) ready() error {
	if s.pool != nil {
		return nil
	}
	r, err := cuda.Open()
	if err != nil {
		return err
	}
	p, err := r.NewPool(s.shape, elemSize(s.dt))
	if err != nil {
		return err
	}
	for _, b := range []struct {
		d     *deviceTensor
		shape tensor.Shape
	}{{&s.x, s.inShape()}, {&s.y, s.outShape()}, {&s.dy, s.outShape()}, {&s.dx, s.inShape()}} {
		if err := b.d.alloc(r, s.dt, b.shape); err != nil {
			return err
		}
	}
	s.pool = p
	return nil
}

// poolOp is the forward max pooling (grad false) or its gradient (grad true, inputs y and dy).
type poolOp struct {
	s    *poolState
	grad bool
}

func (op *poolOp) Arity() int {
	if op.grad {
		return 2
	}
	return 1
}
func (op *poolOp) Type() hm.Type {
	if op.grad {
		return hm.NewFnType(tensorType(4), tensorType(4), tensorType(4))
	}
	return hm.NewFnType(tensorType(4), tensorType(4))
}
func (op *poolOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if op.grad {
		return op.s.inShape(), nil
	}
	return op.s.outShape(), nil
}
func (op *poolOp) ReturnsPtr() bool      { return false }
func (op *poolOp) CallsExtern() bool     { return false }
func (op *poolOp) OverwritesInput() int  { return -1 }
func (op *poolOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *poolOp) Hashcode() uint32      { return hashOf(op) }
func (op *poolOp) String() string {
	g := op.s.shape
	kind := "CUDAMaxPool"
	if op.grad {
		kind = "CUDAMaxPoolGrad"
	}
	return fmt.Sprintf("%s#%d{k%d/s%dp%d}", kind, op.s.serial, g.K, g.Stride, g.Pad)
}
func (op *poolOp) DiffWRT(int) []bool { return []bool{!op.grad} }

func (op *poolOp) SymDiff(_ G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if op.grad {
		return nil, fmt.Errorf("%v: second derivatives are not implemented", op)
	}
	dx, err := G.ApplyOp(&poolOp{s: op.s, grad: true}, output, grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx}, nil
}

func (op *poolOp) Do(vals ...G.Value) (G.Value, error) {
	s := op.s
	if !op.grad {
		x, err := denseInput("cuda max pool", 0, vals[0], s.dt, s.inShape())
		if err != nil {
			return nil, err
		}
		if err := s.ready(); err != nil {
			return nil, fmt.Errorf("cuda max pool: %w", err)
		}
		s.run++
		if err := s.x.upload(x, s.run); err != nil {
			return nil, fmt.Errorf("cuda max pool: x: %w", err)
		}
		if err := s.pool.Forward(s.x.buf, s.y.buf); err != nil {
			return nil, err
		}
		return s.y.download(s.outShape())
	}
	if _, err := denseInput("cuda max pool gradient", 0, vals[0], s.dt, s.outShape()); err != nil {
		return nil, err
	}
	dy, err := denseInput("cuda max pool gradient", 1, vals[1], s.dt, s.outShape())
	if err != nil {
		return nil, err
	}
	if s.pool == nil {
		return nil, fmt.Errorf("cuda max pool gradient: the forward pooling has not run")
	}
	if err := s.dy.upload(dy, s.run); err != nil {
		return nil, fmt.Errorf("cuda max pool gradient: dy: %w", err)
	}
	if err := s.pool.Backward(s.y.buf, s.dy.buf, s.x.buf, s.dx.buf); err != nil {
		return nil, err
	}
	return s.dx.download(s.inShape())
}
