package ops

import (
	"fmt"
	"hash"
	"hash/fnv"
	"sync/atomic"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// float is the element type the ops compute in.
type float interface{ float32 | float64 }

// opSerial numbers stateful op instances so that gorgonia's graph, which merges nodes with equal hashes,
// never merges two of them.
var opSerial atomic.Uint64

// buffer is a tensor an op instance owns: an output it returns from Do on every run, or private scratch space,
// so that training steps do not allocate.
type buffer struct{ t *tensor.Dense }

// get returns the buffer with dtype dt and the given shape, reallocating only when the size or dtype
// changed. The shape is restored on every call because a downstream op may have reshaped the value in place.
func (b *buffer) get(dt tensor.Dtype, shape ...int) *tensor.Dense {
	size := 1
	for _, s := range shape {
		size *= s
	}
	if b.t != nil && b.t.Dtype() == dt && b.t.DataSize() == size && !b.t.IsView() {
		if b.t.Shape().Eq(tensor.Shape(shape)) || b.t.Reshape(shape...) == nil {
			return b.t
		}
	}
	b.t = tensor.New(tensor.Of(dt), tensor.WithShape(shape...))
	return b.t
}

// denseOf returns v as a contiguous dense tensor of dtype dt and shape want (nil want skips the shape check).
func denseOf(op string, i int, v G.Value, dt tensor.Dtype, want tensor.Shape) (*tensor.Dense, error) {
	d, ok := v.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("%s: input %d is %T, want a dense tensor: %w", op, i, v, ErrShape)
	}
	if d.Dtype() != dt {
		return nil, fmt.Errorf("%s: input %d is %v, want %v: %w", op, i, d.Dtype(), dt, ErrShape)
	}
	if want != nil && !d.Shape().Eq(want) {
		return nil, fmt.Errorf("%s: input %d has shape %v, want %v: %w", op, i, d.Shape(), want, ErrShape)
	}
	if d.RequiresIterator() {
		d = d.Materialize().(*tensor.Dense)
	}
	return d, nil
}

// tensorType returns gorgonia's type of a tensor with dims dimensions of the element type variable a.
func tensorType(dims int) hm.Type {
	return G.TensorType{Dims: dims, Of: hm.TypeVariable('a')}
}

// plainOp holds the Op methods shared by the ops built on it: none returns a pointer into its inputs, calls
// an external library asynchronously (BLAS calls finish inside Do), or overwrites an input.
type plainOp struct{}

func (plainOp) ReturnsPtr() bool     { return false }
func (plainOp) CallsExtern() bool    { return false }
func (plainOp) OverwritesInput() int { return -1 }

// inPlaceOp holds the Op methods of the ops that may write their result over one of their inputs: input 0 for
// batch norm, Add and AddReLU, the incoming gradient for the ReLU and batch-norm gradients. With overwrite set
// (never for a leaf input, a value the caller binds), OverwritesInput names that input and ReturnsPtr is true,
// the only case in which gorgonia's register allocator considers it: when nothing reads the input after the
// op (the forward pass of frozen layers, evaluation graphs, and in training most gradients, which one op
// consumes), the op gets its register, and the tape machine calls the op's UsePreallocDo (or UnsafeDo) with
// that input as destination. A backward pass then does not keep a buffer per gradient op from step to step.
type inPlaceOp struct {
	overwrite bool
	input     int
}

func (op inPlaceOp) ReturnsPtr() bool { return op.overwrite }
func (inPlaceOp) CallsExtern() bool   { return false }
func (op inPlaceOp) OverwritesInput() int {
	if op.overwrite {
		return op.input
	}
	return -1
}

// isDest reports whether the destination gorgonia passes to UsePreallocDo is the overwritable input itself.
func (op inPlaceOp) isDest(dest G.Value, vals []G.Value) bool {
	return len(vals) > op.input && dest == vals[op.input]
}

// hashOf hashes an op by its String, which names the op instance.
func hashOf(op fmt.Stringer) uint32 {
	h := fnv.New32a()
	fmt.Fprint(h, op.String())
	return h.Sum32()
}

// checkFloat reports an error unless n holds float32 or float64 values.
func checkFloat(op string, n *G.Node) error {
	if dt := n.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
		return fmt.Errorf("%s: %q is %v, want float32 or float64: %w", op, n.Name(), dt, ErrShape)
	}
	return nil
}

// requireFloatNode returns an error unless n holds float32 or float64 values.
func requireFloatNode(op string, n *G.Node) error {
	if n == nil {
		return fmt.Errorf("%s: nil input node: %w", op, ErrShape)
	}
	if dt := n.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
		return fmt.Errorf("%s: input %q has dtype %v, want float32 or float64: %w", op, n.Name(), dt, ErrShape)
	}
	return nil
}

// inferredShape returns a copy of the shape gorgonia passes to InferShape.
func inferredShape(op string, d G.DimSizer) (tensor.Shape, error) {
	s, ok := d.(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("%s: input shape is %T, want tensor.Shape: %w", op, d, ErrShape)
	}
	return s.Clone(), nil
}

// floatDenseValue returns v as a contiguous float32 or float64 *tensor.Dense. Views are materialised into a copy, so
// the result's Data() is always laid out row-major in the order of its shape.
func floatDenseValue(op string, v G.Value) (*tensor.Dense, error) {
	d, ok := v.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("%s: input is %T, want *tensor.Dense: %w", op, v, ErrShape)
	}
	if dt := d.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, fmt.Errorf("%s: input has dtype %v, want float32 or float64: %w", op, dt, ErrShape)
	}
	if d.IsMaterializable() {
		m, ok := d.Materialize().(*tensor.Dense)
		if !ok {
			return nil, fmt.Errorf("%s: cannot materialise a view of %v", op, d.Shape())
		}
		return m, nil
	}
	return d, nil
}

// hashByText hashes an op by its WriteHash text, as gorgonia's own ops do.
func hashByText(op interface{ WriteHash(hash.Hash) }) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
