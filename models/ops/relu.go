package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ReLU returns max(x, 0) element-wise, for a tensor of any shape. Its gradient is 1 where x > 0 and 0
// elsewhere (PyTorch's convention at 0; gorgonia's Rectify passes the gradient at 0). It returns an error
// wrapping ErrShape unless x is float32 or float64.
func ReLU(x *G.Node) (*G.Node, error) {
	if err := checkFloat("relu", x); err != nil {
		return nil, err
	}
	return G.ApplyOp(&reluOp{shape: x.Shape().Clone()}, x)
}

// reluOp computes max(x, 0); it has no state, so equal ReLUs of one node may be merged by the graph.
type reluOp struct {
	plainOp
	shape tensor.Shape
	out   buffer
}

func (op *reluOp) Arity() int { return 1 }
func (op *reluOp) Type() hm.Type {
	return hm.NewFnType(tensorType(op.shape.Dims()), tensorType(op.shape.Dims()))
}
func (op *reluOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.shape.Clone(), nil
}
func (op *reluOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *reluOp) Hashcode() uint32      { return hashOf(op) }
func (op *reluOp) String() string        { return fmt.Sprintf("ReLU%v", op.shape) }

func (op *reluOp) DiffWRT(int) []bool { return []bool{true} }
func (op *reluOp) SymDiff(_ G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	dx, err := G.ApplyOp(&reluGradOp{inPlaceOp: inPlaceOp{overwrite: grad.Op() != nil, input: 1}, shape: op.shape}, output, grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx}, nil
}

func (op *reluOp) Do(vals ...G.Value) (G.Value, error) {
	x, err := denseOf("relu", 0, vals[0], vals[0].Dtype(), op.shape)
	if err != nil {
		return nil, err
	}
	y := op.out.get(x.Dtype(), op.shape...)
	switch x.Dtype() {
	case tensor.Float32:
		relu(x.Float32s(), y.Float32s())
	case tensor.Float64:
		relu(x.Float64s(), y.Float64s())
	default:
		return nil, fmt.Errorf("relu: dtype %v: %w", x.Dtype(), ErrShape)
	}
	return y, nil
}

func relu[T float](x, y []T) {
	parallelFor(len(x), 1<<15, func(lo, hi int) {
		affine(y[lo:hi], x[lo:hi], 1, 0, true)
	})
}

// reluGradOp computes dx = dy where y > 0, else 0, from the forward output y and dy, into its own buffer or
// over dy when gorgonia finds nothing reads dy later (inPlaceOp).
type reluGradOp struct {
	inPlaceOp
	shape tensor.Shape
	out   buffer
}

// UsePreallocDo writes over dy when dest is dy itself, else as Do.
func (op *reluGradOp) UsePreallocDo(dest G.Value, vals ...G.Value) (G.Value, error) {
	return op.do(op.isDest(dest, vals), vals...)
}

// UnsafeDo writes the result over dy.
func (op *reluGradOp) UnsafeDo(vals ...G.Value) (G.Value, error) { return op.do(true, vals...) }

func (op *reluGradOp) Arity() int { return 2 }
func (op *reluGradOp) Type() hm.Type {
	t := tensorType(op.shape.Dims())
	return hm.NewFnType(t, t, t)
}
func (op *reluGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.shape.Clone(), nil
}
func (op *reluGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *reluGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *reluGradOp) String() string        { return fmt.Sprintf("ReLUGrad%v", op.shape) }

// Do writes dx into the op's own buffer.
func (op *reluGradOp) Do(vals ...G.Value) (G.Value, error) { return op.do(false, vals...) }

func (op *reluGradOp) do(inPlace bool, vals ...G.Value) (G.Value, error) {
	y, err := denseOf("relu gradient", 0, vals[0], vals[0].Dtype(), op.shape)
	if err != nil {
		return nil, err
	}
	dy, err := denseOf("relu gradient", 1, vals[1], y.Dtype(), op.shape)
	if err != nil {
		return nil, err
	}
	dx := dy
	if !inPlace {
		dx = op.out.get(y.Dtype(), op.shape...)
	}
	switch y.Dtype() {
	case tensor.Float32:
		reluGrad(y.Float32s(), dy.Float32s(), dx.Float32s())
	case tensor.Float64:
		reluGrad(y.Float64s(), dy.Float64s(), dx.Float64s())
	default:
		return nil, fmt.Errorf("relu gradient: dtype %v: %w", y.Dtype(), ErrShape)
	}
	return dx, nil
}

func reluGrad[T float](y, dy, dx []T) {
	parallelFor(len(y), 1<<15, func(lo, hi int) {
		maskByPositive(y[lo:hi], dy[lo:hi], dx[lo:hi])
	})
}
