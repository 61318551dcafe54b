package cudaops

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/gpu/internal/cuda"
	"github.com/bicyc/bicyc/models/ops"
)

// deviceTensor is a device buffer holding one tensor of a fixed shape, with the host tensor the op returns.
type deviceTensor struct {
	buf  *cuda.Buffer
	host *tensor.Dense
	// src is the host value last uploaded in the run numbered run, so that two gradient ops receiving the
	// same incoming gradient upload it once.
	src *tensor.Dense
	run uint64
}

// alloc allocates the device buffer for shape and dtype dt, once.
func (d *deviceTensor) alloc(r *cuda.Runtime, dt tensor.Dtype, shape tensor.Shape) error {
	if d.buf != nil {
		return nil
	}
	b, err := r.Alloc(shape.TotalSize() * int(dt.Size()))
	if err != nil {
		return err
	}
	d.buf = b
	d.host = tensor.New(tensor.Of(dt), tensor.WithShape(shape...))
	return nil
}

// upload copies v into the device buffer unless v was uploaded already in this run.
func (d *deviceTensor) upload(v *tensor.Dense, run uint64) error {
	if d.src == v && d.run == run {
		return nil
	}
	var err error
	switch v.Dtype() {
	case tensor.Float32:
		err = cuda.Upload(d.buf, v.Float32s())
	case tensor.Float64:
		err = cuda.Upload(d.buf, v.Float64s())
	default:
		err = fmt.Errorf("dtype %v: %w", v.Dtype(), ops.ErrShape)
	}
	if err == nil {
		d.src, d.run = v, run
	}
	return err
}

// download copies the device buffer into the host tensor and returns it; its shape is restored first, as a
// downstream op may have reshaped it in place.
func (d *deviceTensor) download(shape tensor.Shape) (*tensor.Dense, error) {
	if !d.host.Shape().Eq(shape) {
		if err := d.host.Reshape(shape...); err != nil {
			return nil, err
		}
	}
	switch d.host.Dtype() {
	case tensor.Float32:
		return d.host, cuda.Download(d.host.Float32s(), d.buf)
	case tensor.Float64:
		return d.host, cuda.Download(d.host.Float64s(), d.buf)
	}
	return nil, fmt.Errorf("dtype %v: %w", d.host.Dtype(), ops.ErrShape)
}

// denseInput returns v as a contiguous dense tensor of dtype dt and shape want.
func denseInput(op string, i int, v any, dt tensor.Dtype, want tensor.Shape) (*tensor.Dense, error) {
	d, ok := v.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("%s: input %d is %T, want a dense tensor: %w", op, i, v, ops.ErrShape)
	}
	if d.Dtype() != dt {
		return nil, fmt.Errorf("%s: input %d is %v, want %v: %w", op, i, d.Dtype(), dt, ops.ErrShape)
	}
	if !d.Shape().Eq(want) {
		return nil, fmt.Errorf("%s: input %d has shape %v, want %v: %w", op, i, d.Shape(), want, ops.ErrShape)
	}
	if d.RequiresIterator() {
		d = d.Materialize().(*tensor.Dense)
	}
	return d, nil
}

// elemSize returns the bytes of one element of dt, for package cuda.
func elemSize(dt tensor.Dtype) int { return int(dt.Size()) }
