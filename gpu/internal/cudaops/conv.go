package cudaops

import (
	"fmt"
	"hash"
	"hash/fnv"
	"sync/atomic"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/gpu/internal/cuda"
	"github.com/bicyc/bicyc/models/ops"
)

// serial numbers op instances so that gorgonia, which merges nodes with equal hashes, never merges two.
var serial atomic.Uint64

// Conv2d is ops.Conv2d computed by cuDNN: the 2-D cross-correlation of x [N,C,H,W] with the filters
// w [O,C,K,K], without bias, with zero padding pad and stride on both axes:
//
//	y[n,o,i,j] = Σ_c Σ_kh Σ_kw w[o,c,kh,kw] · x[n,c,i·stride+kh-pad, j·stride+kw-pad]
//
// As for ops.Conv2d, the gradient with respect to x is built only when x is not a leaf of the graph. Shape
// and dtype errors wrap ops.ErrShape; they are found here, without a GPU.
func Conv2d(x, w *G.Node, stride, pad int) (*G.Node, error) {
	xs, ws := x.Shape(), w.Shape()
	switch {
	case xs.Dims() != 4:
		return nil, fmt.Errorf("cuda conv2d: input %q has shape %v, want [N,C,H,W]: %w", x.Name(), xs, ops.ErrShape)
	case ws.Dims() != 4 || ws[2] != ws[3]:
		return nil, fmt.Errorf("cuda conv2d: filter %q has shape %v, want [O,C,K,K]: %w", w.Name(), ws, ops.ErrShape)
	case ws[1] != xs[1]:
		return nil, fmt.Errorf("cuda conv2d: filter %q has %d input channels, input %q has %d: %w", w.Name(), ws[1], x.Name(), xs[1], ops.ErrShape)
	case x.Dtype() != w.Dtype():
		return nil, fmt.Errorf("cuda conv2d: input %q is %v, filter %q is %v: %w", x.Name(), x.Dtype(), w.Name(), w.Dtype(), ops.ErrShape)
	case x.Dtype() != tensor.Float32 && x.Dtype() != tensor.Float64:
		return nil, fmt.Errorf("cuda conv2d: input %q is %v, want float32 or float64: %w", x.Name(), x.Dtype(), ops.ErrShape)
	case stride < 1 || pad < 0:
		return nil, fmt.Errorf("cuda conv2d: stride %d, pad %d: want stride >= 1 and pad >= 0: %w", stride, pad, ops.ErrShape)
	case xs.TotalSize() == 0 || ws.TotalSize() == 0:
		return nil, fmt.Errorf("cuda conv2d: input %v or filter %v is empty: %w", xs, ws, ops.ErrShape)
	case xs[2]+2*pad < ws[2] || xs[3]+2*pad < ws[3]:
		return nil, fmt.Errorf("cuda conv2d: kernel %d does not fit input %q of shape %v with pad %d: %w", ws[2], x.Name(), xs, pad, ops.ErrShape)
	}
	s := &convState{
		shape:  cuda.ConvShape{N: xs[0], C: xs[1], H: xs[2], W: xs[3], O: ws[0], K: ws[2], Stride: stride, Pad: pad},
		dt:     x.Dtype(),
		serial: serial.Add(1),
	}
	return G.ApplyOp(&convOp{s: s, inputGrad: x.Op() != nil}, x, w)
}

// convState is what a convolution's forward op and its two gradient ops share: the cuDNN descriptors and
// the device copies of x, w, y, dy, dx and dw. The gradient ops use the x and w the forward op uploaded in
// the same run.
type convState struct {
	shape               cuda.ConvShape
	dt                  tensor.Dtype
	serial              uint64
	run                 uint64 // counts forward runs
	conv                *cuda.Conv
	x, w, y, dy, dx, dw deviceTensor
}

func (s *convState) inShape() tensor.Shape {
	return tensor.Shape{s.shape.N, s.shape.C, s.shape.H, s.shape.W}
}
func (s *convState) filterShape() tensor.Shape {
	return tensor.Shape{s.shape.O, s.shape.C, s.shape.K, s.shape.K}
}
func (s *convState) outShape() tensor.Shape {
	oh, ow := s.shape.Out()
	return tensor.Shape{s.shape.N, s.shape.O, oh, ow}
}
func (s *convState) String() string {
	g := s.shape
	return fmt.Sprintf("%dx%dx%dx%d*%dx%dx%dx%d/s%dp%d", g.N, g.C, g.H, g.W, g.O, g.C, g.K, g.K, g.Stride, g.Pad)
}

// ready opens CUDA and allocates the descriptors and buffers, on the first run.
func (s *convState) ready() error {
	if s.conv != nil {
		return nil
	}
	r, err := cuda.Open()
	if err != nil {
		return err
	}
	c, err := r.NewConv(s.shape, elemSize(s.dt))
	if err != nil {
		return err
	}
	for _, b := range []struct {
		d     *deviceTensor
		shape tensor.Shape
	}{{&s.x, s.inShape()}, {&s.w, s.filterShape()}, {&s.y, s.outShape()}, {&s.dy, s.outShape()}, {&s.dx, s.inShape()}, {&s.dw, s.filterShape()}} {
		if err := b.d.alloc(r, s.dt, b.shape); err != nil {
			return err
		}
	}
	s.conv = c
	return nil
}

// ConvAlgos returns the cuDNN algorithms the convolution n (a Conv2d output) ran with: forward, data gradient,
// filter gradient; nil for another node or before its first run.
func ConvAlgos(n *G.Node) []int32 {
	if op, ok := n.Op().(*convOp); ok && op.s.conv != nil {
		return op.s.conv.Algos[:]
	}
	return nil
}

// convOp is the forward convolution.
type convOp struct {
	s         *convState
	inputGrad bool
}

func (op *convOp) Arity() int { return 2 }
func (op *convOp) Type() hm.Type {
	return hm.NewFnType(tensorType(4), tensorType(4), tensorType(4))
}
func (op *convOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.s.outShape(), nil }
func (op *convOp) ReturnsPtr() bool                               { return false }
func (op *convOp) CallsExtern() bool                              { return false }
func (op *convOp) OverwritesInput() int                           { return -1 }
func (op *convOp) WriteHash(h hash.Hash)                          { fmt.Fprint(h, op.String()) }
func (op *convOp) Hashcode() uint32                               { return hashOf(op) }
func (op *convOp) String() string                                 { return fmt.Sprintf("CUDAConv2d#%d{%v}", op.s.serial, op.s) }
func (op *convOp) DiffWRT(int) []bool                             { return []bool{op.inputGrad, true} }

func (op *convOp) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	var dx *G.Node
	var err error
	if op.inputGrad {
		if dx, err = G.ApplyOp(&convInputGradOp{s: op.s}, in[1], grad); err != nil {
			return nil, err
		}
	}
	dw, err := G.ApplyOp(&convFilterGradOp{s: op.s}, in[0], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx, dw}, nil
}

func (op *convOp) Do(vals ...G.Value) (G.Value, error) {
	s := op.s
	x, err := denseInput("cuda conv2d", 0, vals[0], s.dt, s.inShape())
	if err != nil {
		return nil, err
	}
	w, err := denseInput("cuda conv2d", 1, vals[1], s.dt, s.filterShape())
	if err != nil {
		return nil, err
	}
	if err := s.ready(); err != nil {
		return nil, fmt.Errorf("cuda conv2d: %w", err)
	}
	s.run++
	if err := s.x.upload(x, s.run); err != nil {
		return nil, fmt.Errorf("cuda conv2d: x: %w", err)
	}
	if err := s.w.upload(w, s.run); err != nil {
		return nil, fmt.Errorf("cuda conv2d: w: %w", err)
	}
	if err := s.conv.Forward(s.x.buf, s.w.buf, s.y.buf); err != nil {
		return nil, err
	}
	return s.y.download(s.outShape())
}

// convInputGradOp computes dx from w and dy.
type convInputGradOp struct{ s *convState }

func (op *convInputGradOp) Arity() int { return 2 }
func (op *convInputGradOp) Type() hm.Type {
	return hm.NewFnType(tensorType(4), tensorType(4), tensorType(4))
}
func (op *convInputGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.s.inShape(), nil
}
func (op *convInputGradOp) ReturnsPtr() bool      { return false }
func (op *convInputGradOp) CallsExtern() bool     { return false }
func (op *convInputGradOp) OverwritesInput() int  { return -1 }
func (op *convInputGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *convInputGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *convInputGradOp) String() string {
	return fmt.Sprintf("CUDAConv2dInputGrad#%d", op.s.serial)
}

func (op *convInputGradOp) Do(vals ...G.Value) (G.Value, error) {
	s := op.s
	if _, err := denseInput("cuda conv2d input gradient", 0, vals[0], s.dt, s.filterShape()); err != nil {
		return nil, err
	}
	dy, err := denseInput("cuda conv2d input gradient", 1, vals[1], s.dt, s.outShape())
	if err != nil {
		return nil, err
	}
	if s.conv == nil {
		return nil, fmt.Errorf("cuda conv2d input gradient: the forward convolution has not run")
	}
	if err := s.dy.upload(dy, s.run); err != nil {
		return nil, fmt.Errorf("cuda conv2d input gradient: dy: %w", err)
	}
	if err := s.conv.BackwardData(s.w.buf, s.dy.buf, s.dx.buf); err != nil {
		return nil, err
	}
	return s.dx.download(s.inShape())
}

// convFilterGradOp computes dw from x and dy.
type convFilterGradOp struct{ s *convState }

func (op *convFilterGradOp) Arity() int { return 2 }
func (op *convFilterGradOp) Type() hm.Type {
	return hm.NewFnType(tensorType(4), tensorType(4), tensorType(4))
}
func (op *convFilterGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.s.filterShape(), nil
}
func (op *convFilterGradOp) ReturnsPtr() bool      { return false }
func (op *convFilterGradOp) CallsExtern() bool     { return false }
func (op *convFilterGradOp) OverwritesInput() int  { return -1 }
func (op *convFilterGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *convFilterGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *convFilterGradOp) String() string {
	return fmt.Sprintf("CUDAConv2dFilterGrad#%d", op.s.serial)
}

func (op *convFilterGradOp) Do(vals ...G.Value) (G.Value, error) {
	s := op.s
	if _, err := denseInput("cuda conv2d filter gradient", 0, vals[0], s.dt, s.inShape()); err != nil {
		return nil, err
	}
	dy, err := denseInput("cuda conv2d filter gradient", 1, vals[1], s.dt, s.outShape())
	if err != nil {
		return nil, err
	}
	if s.conv == nil {
		return nil, fmt.Errorf("cuda conv2d filter gradient: the forward convolution has not run")
	}
	if err := s.dy.upload(dy, s.run); err != nil {
		return nil, fmt.Errorf("cuda conv2d filter gradient: dy: %w", err)
	}
	if err := s.conv.BackwardFilter(s.x.buf, s.dy.buf, s.dw.buf); err != nil {
		return nil, err
	}
	return s.dw.download(s.filterShape())
}

// tensorType returns gorgonia's type of a tensor with dims dimensions of the element type variable a.
func tensorType(dims int) hm.Type {
	return G.TensorType{Dims: dims, Of: hm.TypeVariable('a')}
}

// hashOf hashes an op by its String, which names the op instance.
func hashOf(op fmt.Stringer) uint32 {
	h := fnv.New32a()
	fmt.Fprint(h, op.String())
	return h.Sum32()
}
