package ops

import (
	"fmt"
	"hash"
	"math"

	"github.com/bicyc/bicyc/models/ops/internal/vector"
	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MaxPool2 returns the maximum of each 2x2 window with stride 2:
//
//	y[n,c,i,j] = max(x[n,c,2i,2j], x[n,c,2i,2j+1], x[n,c,2i+1,2j], x[n,c,2i+1,2j+1])
//
// x is [N,C,H,W] with H and W even, y is [N,C,H/2,W/2]. The gradient goes to the first maximum of each window
// in row-major order (as gorgonia's MaxPool2D does, except that float32 ranks -0 below +0). NaNs are not
// supported: the result of a window holding one depends on the dtype. It returns an error wrapping ErrShape
// for other shapes.
func MaxPool2(x *G.Node) (*G.Node, error) {
	xs := x.Shape()
	if xs.Dims() != 4 || xs[2]%2 != 0 || xs[3]%2 != 0 || xs.TotalSize() == 0 {
		return nil, fmt.Errorf("max pool 2x2: input %q has shape %v, want [N,C,H,W] with H, W even and positive: %w", x.Name(), xs, ErrShape)
	}
	if err := checkFloat("max pool 2x2", x); err != nil {
		return nil, err
	}
	return G.ApplyOp(&maxPoolOp{shape: xs.Clone(), serial: opSerial.Add(1)}, x)
}

// maxPoolOp is the 2x2 max pooling; it keeps, for each output, which of the four window positions (0..3,
// row-major) held the maximum, for maxPoolGradOp in the same run.
type maxPoolOp struct {
	plainOp
	shape  tensor.Shape // [N,C,H,W] of x
	serial uint64
	argmax []uint8
	out    buffer
}

func (op *maxPoolOp) Arity() int    { return 1 }
func (op *maxPoolOp) Type() hm.Type { return hm.NewFnType(tensorType(4), tensorType(4)) }
func (op *maxPoolOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.outShape(), nil
}
func (op *maxPoolOp) outShape() tensor.Shape {
	return tensor.Shape{op.shape[0], op.shape[1], op.shape[2] / 2, op.shape[3] / 2}
}
func (op *maxPoolOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *maxPoolOp) Hashcode() uint32      { return hashOf(op) }
func (op *maxPoolOp) String() string        { return fmt.Sprintf("MaxPool2#%d%v", op.serial, op.shape) }

func (op *maxPoolOp) DiffWRT(int) []bool { return []bool{true} }
func (op *maxPoolOp) SymDiff(_ G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	dx, err := G.ApplyOp(&maxPoolGradOp{fwd: op}, grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx}, nil
}

func (op *maxPoolOp) Do(vals ...G.Value) (G.Value, error) {
	if profileLabels.Load() {
		defer labelOp(op.String())()
	}
	x, err := denseOf("max pool 2x2", 0, vals[0], vals[0].Dtype(), op.shape)
	if err != nil {
		return nil, err
	}
	y := op.out.get(x.Dtype(), op.outShape()...)
	if op.argmax == nil {
		op.argmax = make([]uint8, y.DataSize())
	}
	switch x.Dtype() {
	case tensor.Float32:
		maxPool2(x.Float32s(), y.Float32s(), op.argmax, op.shape[2], op.shape[3])
	case tensor.Float64:
		maxPool2(x.Float64s(), y.Float64s(), op.argmax, op.shape[2], op.shape[3])
	default:
		return nil, fmt.Errorf("max pool 2x2: dtype %v: %w", x.Dtype(), ErrShape)
	}
	return y, nil
}

// maxPool2 pools every h×w plane of x into y, recording the winning window position in argmax. Planes are
// split across goroutines. float32 data takes a branch-free path (see maxPool2Float32).
func maxPool2[T float](x, y []T, argmax []uint8, h, w int) {
	oh, ow := h/2, w/2
	planes := len(x) / (h * w)
	x32, isFloat32 := any(x).([]float32)
	parallelFor(planes, 1+8192/(h*w), func(lo, hi int) {
		if isFloat32 {
			maxPool2Float32(x32[lo*h*w:hi*h*w], any(y).([]float32)[lo*oh*ow:hi*oh*ow], argmax[lo*oh*ow:hi*oh*ow], w)
			return
		}
		for pl := lo; pl < hi; pl++ {
			src := x[pl*h*w : (pl+1)*h*w]
			dst := y[pl*oh*ow : (pl+1)*oh*ow]
			arg := argmax[pl*oh*ow : (pl+1)*oh*ow]
			for i := 0; i < oh; i++ {
				top := src[2*i*w : (2*i+1)*w]
				bottom := src[(2*i+1)*w : (2*i+2)*w]
				d := dst[i*ow : (i+1)*ow]
				a := arg[i*ow : (i+1)*ow]
				for j := range d {
					best, at := top[2*j], uint8(0)
					if v := top[2*j+1]; v > best {
						best, at = v, 1
					}
					if v := bottom[2*j]; v > best {
						best, at = v, 2
					}
					if v := bottom[2*j+1]; v > best {
						best, at = v, 3
					}
					d[j], a[j] = best, at
				}
			}
		}
	})
}

// orderedKey maps a float32 to an int32 with the same order (-0 just below +0, NaNs beyond ±Inf), so that
// comparisons and maxima compile to conditional moves instead of branches; it is its own inverse on the bits.
func orderedKey(v float32) int32 {
	b := int32(math.Float32bits(v))
	return b ^ (b >> 31 & 0x7fffffff)
}

// maxPool2Float32 is maxPool2 for whole float32 planes of width w. Planes have an even height, so x is a
// sequence of row pairs, each pooled into one row of y by maxPoolRowPair.
func maxPool2Float32(x, y []float32, argmax []uint8, w int) {
	ow := w / 2
	for r := 0; r < len(y)/ow; r++ {
		pair := x[2*r*w : 2*(r+1)*w]
		maxPoolRowPair(pair[:w], pair[w:], y[r*ow:(r+1)*ow], argmax[r*ow:(r+1)*ow])
	}
}

// maxPoolRowPair pools the 2x2 windows of the rows top and bottom into y and argmax: with the assembly kernel
// vector.MaxPoolRowPair where the processor runs it and the row has at least four windows, otherwise with
// maxPoolRowPairScalar. Both order values by orderedKey, so they give the same results bit for bit.
func maxPoolRowPair(top, bottom, y []float32, argmax []uint8) {
	if vector.HasAVX2 && len(y) >= 4 {
		vector.MaxPoolRowPair(y, argmax, top, bottom)
		return
	}
	maxPoolRowPairScalar(top, bottom, y, argmax)
}

// maxPoolRowPairScalar pools the 2x2 windows of the rows top and bottom into y and argmax without a branch: the
// winners of random data (and of ReLU outputs, often tied at 0) are unpredictable, and a mispredicted branch
// per window made the loop three times slower. Values are compared as orderedKeys, whose maxima compile to
// conditional moves, and the winner's position comes from the signs of key differences (int64, so that they
// cannot overflow). Ties go to the first position in row-major order.
func maxPoolRowPairScalar(top, bottom, y []float32, argmax []uint8) {
	top, bottom, argmax = top[:2*len(y)], bottom[:2*len(y)], argmax[:len(y)]
	for j := range y {
		t, b := top[2*j:2*j+2:2*j+2], bottom[2*j:2*j+2:2*j+2]
		k0, k1 := int64(orderedKey(t[0])), int64(orderedKey(t[1]))
		k2, k3 := int64(orderedKey(b[0])), int64(orderedKey(b[1]))
		atTop := uint8(uint64(k0-k1) >> 63)      // 1 if k1 > k0
		atBottom := 2 | uint8(uint64(k2-k3)>>63) // 3 if k3 > k2
		maxTop, maxBottom := max(k0, k1), max(k2, k3)
		bottomWins := uint8(uint64(maxTop-maxBottom) >> 63) // 1 if maxBottom > maxTop
		best := max(maxTop, maxBottom)
		y[j] = math.Float32frombits(uint32(int32(best) ^ (int32(best) >> 31 & 0x7fffffff)))
		argmax[j] = atTop ^ (atTop^atBottom)&-bottomWins
	}
}

// maxPoolGradOp routes each output gradient to the window position its forward op recorded; the other
// three positions get zero.
type maxPoolGradOp struct {
	plainOp
	fwd *maxPoolOp
	out buffer
}

func (op *maxPoolGradOp) Arity() int    { return 1 }
func (op *maxPoolGradOp) Type() hm.Type { return hm.NewFnType(tensorType(4), tensorType(4)) }
func (op *maxPoolGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.fwd.shape.Clone(), nil
}
func (op *maxPoolGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *maxPoolGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *maxPoolGradOp) String() string        { return fmt.Sprintf("MaxPool2Grad#%d", op.fwd.serial) }

func (op *maxPoolGradOp) Do(vals ...G.Value) (G.Value, error) {
	if profileLabels.Load() {
		defer labelOp(op.fwd.String() + " gradient")()
	}
	dy, err := denseOf("max pool 2x2 gradient", 0, vals[0], vals[0].Dtype(), op.fwd.outShape())
	if err != nil {
		return nil, err
	}
	if op.fwd.argmax == nil {
		return nil, fmt.Errorf("max pool 2x2 gradient: %v ran before its forward pass", op)
	}
	dx := op.out.get(dy.Dtype(), op.fwd.shape...)
	h, w := op.fwd.shape[2], op.fwd.shape[3]
	switch dy.Dtype() {
	case tensor.Float32:
		maxPool2Grad(dy.Float32s(), dx.Float32s(), op.fwd.argmax, h, w)
	case tensor.Float64:
		maxPool2Grad(dy.Float64s(), dx.Float64s(), op.fwd.argmax, h, w)
	default:
		return nil, fmt.Errorf("max pool 2x2 gradient: dtype %v: %w", dy.Dtype(), ErrShape)
	}
	return dx, nil
}

// maxPool2Grad writes every element of dx: the output gradient at each window's recorded position, zero
// elsewhere. float32 rows of at least four windows go through the assembly kernel vector.MaxPoolGradRowPair
// where the processor runs it, which writes whole rows and so needs no clearing pass first.
func maxPool2Grad[T float](dy, dx []T, argmax []uint8, h, w int) {
	oh, ow := h/2, w/2
	planes := len(dx) / (h * w)
	dy32, isFloat32 := any(dy).([]float32)
	parallelFor(planes, 1+8192/(h*w), func(lo, hi int) {
		if isFloat32 && vector.HasAVX2 && ow >= 4 {
			dx32 := any(dx).([]float32)
			for r := lo * oh; r < hi*oh; r++ {
				rows := dx32[2*r*w : 2*(r+1)*w]
				vector.MaxPoolGradRowPair(rows[:w], rows[w:], dy32[r*ow:(r+1)*ow], argmax[r*ow:(r+1)*ow])
			}
			return
		}
		clear(dx[lo*h*w : hi*h*w])
		for pl := lo; pl < hi; pl++ {
			g := dy[pl*oh*ow : (pl+1)*oh*ow]
			arg := argmax[pl*oh*ow : (pl+1)*oh*ow]
			plane := dx[pl*h*w : (pl+1)*h*w]
			for i := 0; i < oh; i++ {
				rows := plane[2*i*w : (2*i+2)*w] // the two input rows of output row i
				for j, v := range g[i*ow : (i+1)*ow] {
					at := int(arg[i*ow+j])
					rows[(at>>1)*w+2*j+at&1] = v
				}
			}
		}
	})
}

// GlobalAvgPool returns the mean of each channel over its spatial positions:
//
//	y[n,c] = 1/(H·W) Σ_i Σ_j x[n,c,i,j]
//
// x is [N,C,H,W], y is [N,C]. It returns an error wrapping ErrShape for other shapes.
func GlobalAvgPool(x *G.Node) (*G.Node, error) {
	xs := x.Shape()
	if xs.Dims() != 4 {
		return nil, fmt.Errorf("global average pool: input %q has shape %v, want [N,C,H,W]: %w", x.Name(), xs, ErrShape)
	}
	if err := checkFloat("global average pool", x); err != nil {
		return nil, err
	}
	return G.ApplyOp(&globalAvgPoolOp{shape: xs.Clone()}, x)
}

// globalAvgPoolOp averages each channel; its gradient spreads dy[n,c]/(H·W) over the channel. (In gorgonia
// v0.9.18, GlobalAveragePool2D has no working gradient and Mean(x, 2, 3) gave wrong outputs or gradients for
// some shapes: see TestGlobalAvgPoolMatchesStock.)
type globalAvgPoolOp struct {
	plainOp
	shape tensor.Shape // [N,C,H,W]
	out   buffer
}

func (op *globalAvgPoolOp) Arity() int    { return 1 }
func (op *globalAvgPoolOp) Type() hm.Type { return hm.NewFnType(tensorType(4), tensorType(2)) }
func (op *globalAvgPoolOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.shape[0], op.shape[1]}, nil
}
func (op *globalAvgPoolOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *globalAvgPoolOp) Hashcode() uint32      { return hashOf(op) }
func (op *globalAvgPoolOp) String() string        { return fmt.Sprintf("GlobalAvgPool%v", op.shape) }

func (op *globalAvgPoolOp) DiffWRT(int) []bool { return []bool{true} }
func (op *globalAvgPoolOp) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	dx, err := G.ApplyOp(&globalAvgPoolGradOp{shape: op.shape}, grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx}, nil
}

func (op *globalAvgPoolOp) Do(vals ...G.Value) (G.Value, error) {
	x, err := denseOf("global average pool", 0, vals[0], vals[0].Dtype(), op.shape)
	if err != nil {
		return nil, err
	}
	y := op.out.get(x.Dtype(), op.shape[0], op.shape[1])
	switch x.Dtype() {
	case tensor.Float32:
		globalAvgPool(x.Float32s(), y.Float32s(), op.shape[2]*op.shape[3])
	case tensor.Float64:
		globalAvgPool(x.Float64s(), y.Float64s(), op.shape[2]*op.shape[3])
	default:
		return nil, fmt.Errorf("global average pool: dtype %v: %w", x.Dtype(), ErrShape)
	}
	return y, nil
}

// globalAvgPool writes the mean of each run of s values of x into y.
func globalAvgPool[T float](x, y []T, s int) {
	inv := 1 / T(s)
	parallelFor(len(y), 1+4096/s, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			var sum T
			for _, v := range x[i*s : (i+1)*s] {
				sum += v
			}
			y[i] = sum * inv
		}
	})
}

// globalAvgPoolGradOp maps dy [N,C] to dx [N,C,H,W] with dx[n,c,i,j] = dy[n,c]/(H·W).
type globalAvgPoolGradOp struct {
	plainOp
	shape tensor.Shape // [N,C,H,W] of x
	out   buffer
}

func (op *globalAvgPoolGradOp) Arity() int    { return 1 }
func (op *globalAvgPoolGradOp) Type() hm.Type { return hm.NewFnType(tensorType(2), tensorType(4)) }
func (op *globalAvgPoolGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.shape.Clone(), nil
}
func (op *globalAvgPoolGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *globalAvgPoolGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *globalAvgPoolGradOp) String() string        { return fmt.Sprintf("GlobalAvgPoolGrad%v", op.shape) }

func (op *globalAvgPoolGradOp) Do(vals ...G.Value) (G.Value, error) {
	dy, err := denseOf("global average pool gradient", 0, vals[0], vals[0].Dtype(), op.shape[:2])
	if err != nil {
		return nil, err
	}
	dx := op.out.get(dy.Dtype(), op.shape...)
	switch dy.Dtype() {
	case tensor.Float32:
		globalAvgPoolGrad(dy.Float32s(), dx.Float32s(), op.shape[2]*op.shape[3])
	case tensor.Float64:
		globalAvgPoolGrad(dy.Float64s(), dx.Float64s(), op.shape[2]*op.shape[3])
	default:
		return nil, fmt.Errorf("global average pool gradient: dtype %v: %w", dy.Dtype(), ErrShape)
	}
	return dx, nil
}

func globalAvgPoolGrad[T float](dy, dx []T, s int) {
	inv := 1 / T(s)
	parallelFor(len(dy), 1+4096/s, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v := dy[i] * inv
			for j := range dx[i*s : (i+1)*s] {
				dx[i*s+j] = v
			}
		}
	})
}
