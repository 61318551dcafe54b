package ops

import (
	"fmt"
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
