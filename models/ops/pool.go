package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MaxPool2 returns the maximum of each 2x2 window with stride 2:
//
//	y[n,c,i,j] = max(x[n,c,2i,2j], x[n,c,2i,2j+1], x[n,c,2i+1,2j], x[n,c,2i+1,2j+1])
//
// x is [N,C,H,W] with H and W even, y is [N,C,H/2,W/2]. The gradient goes to the first maximum of each window
// in row-major order. It returns an error wrapping ErrShape for other shapes.
func MaxPool2(x *G.Node) (*G.Node, error) {
	xs := x.Shape()
	if xs.Dims() != 4 || xs[2]%2 != 0 || xs[3]%2 != 0 || xs[2] == 0 || xs[3] == 0 {
		return nil, fmt.Errorf("max pool 2x2: input %q has shape %v, want [N,C,H,W] with H, W even: %w", x.Name(), xs, ErrShape)
	}
	if err := checkFloat("max pool 2x2", x); err != nil {
		return nil, err
	}
	return G.MaxPool2D(x, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2})
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

// globalAvgPoolOp averages each channel; its gradient spreads dy[n,c]/(H·W) over the channel.
// (gorgonia v0.9.18's Mean(x, 2, 3) divides by (H·W)² in the forward pass, and its GlobalAveragePool2D has no
// working gradient.)
type globalAvgPoolOp struct {
	shape tensor.Shape // [N,C,H,W]
	out   buffer
}

func (op *globalAvgPoolOp) Arity() int    { return 1 }
func (op *globalAvgPoolOp) Type() hm.Type { return hm.NewFnType(tensorType(4), tensorType(2)) }
func (op *globalAvgPoolOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.shape[0], op.shape[1]}, nil
}
func (op *globalAvgPoolOp) ReturnsPtr() bool      { return false }
func (op *globalAvgPoolOp) CallsExtern() bool     { return false }
func (op *globalAvgPoolOp) OverwritesInput() int  { return -1 }
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
	shape tensor.Shape // [N,C,H,W] of x
	out   buffer
}

func (op *globalAvgPoolGradOp) Arity() int    { return 1 }
func (op *globalAvgPoolGradOp) Type() hm.Type { return hm.NewFnType(tensorType(2), tensorType(4)) }
func (op *globalAvgPoolGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.shape.Clone(), nil
}
func (op *globalAvgPoolGradOp) ReturnsPtr() bool      { return false }
func (op *globalAvgPoolGradOp) CallsExtern() bool     { return false }
func (op *globalAvgPoolGradOp) OverwritesInput() int  { return -1 }
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
