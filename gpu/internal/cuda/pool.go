package cuda

import (
	"errors"
	"fmt"
)

// PoolShape is one 2-D max pooling: input [N,C,H,W], k x k windows with the same stride and padding on both
// axes, output [N,C,OH,OW], as models/ops.MaxPool computes it.
type PoolShape struct {
	N, C, H, W, K, Stride, Pad int
}

// Out returns the output's height and width.
func (s PoolShape) Out() (oh, ow int) {
	return (s.H+2*s.Pad-s.K)/s.Stride + 1, (s.W+2*s.Pad-s.K)/s.Stride + 1
}

const (
	poolMaxDeterministic = 3 // CUDNN_POOLING_MAX_DETERMINISTIC
	notPropagateNaN      = 0 // CUDNN_NOT_PROPAGATE_NAN
)

// Pool holds the cuDNN descriptors of one max pooling shape. Close releases them.
type Pool struct {
	r      *Runtime
	elem   int
	x, y   handle
	pool   handle
	closed bool
}

// NewPool describes a max pooling of elements of elem bytes (4 float32, 8 float64) to cuDNN.
func (r *Runtime) NewPool(s PoolShape, elem int) (*Pool, error) {
	dataType, err := dnnDataType("pool", elem)
	if err != nil {
		return nil, err
	}
	oh, ow := s.Out()
	if s.N < 1 || s.C < 1 || s.K < 1 || s.Stride < 1 || s.Pad < 0 || 2*s.Pad > s.K || oh < 1 || ow < 1 {
		return nil, fmt.Errorf("cuda: pool: bad shape %+v", s)
	}
	p := &Pool{r: r, elem: elem}
	r.callMu.Lock()
	defer r.callMu.Unlock()
	err = errors.Join(
		r.dnnCheck("cudnnCreateTensorDescriptor", r.dnn.createTensorDesc(&p.x)),
		r.dnnCheck("cudnnCreateTensorDescriptor", r.dnn.createTensorDesc(&p.y)),
		r.dnnCheck("cudnnCreatePoolingDescriptor", r.dnn.createPoolDesc(&p.pool)),
	)
	if err == nil {
		err = errors.Join(
			r.dnnCheck("cudnnSetTensor4dDescriptor(x)", r.dnn.setTensor4d(p.x, formatNCHW, dataType, int32(s.N), int32(s.C), int32(s.H), int32(s.W))),
			r.dnnCheck("cudnnSetTensor4dDescriptor(y)", r.dnn.setTensor4d(p.y, formatNCHW, dataType, int32(s.N), int32(s.C), int32(oh), int32(ow))),
			r.dnnCheck("cudnnSetPooling2dDescriptor", r.dnn.setPool2d(p.pool, poolMaxDeterministic, notPropagateNaN,
				int32(s.K), int32(s.K), int32(s.Pad), int32(s.Pad), int32(s.Stride), int32(s.Stride))),
		)
	}
	if err != nil {
		p.closeLocked()
		return nil, fmt.Errorf("cuda: pool %+v: %w", s, err)
	}
	return p, nil
}

// Forward computes y, the maximum of each window of x.
func (p *Pool) Forward(x, y *Buffer) error {
	r := p.r
	r.callMu.Lock()
	defer r.callMu.Unlock()
	a, b := scalarsFor(p.elem)
	return r.dnnCheck("cudnnPoolingForward", r.dnn.poolForward(r.hDNN, p.pool, a, p.x, x.ptr, b, p.y, y.ptr))
}

// Backward computes dx from the forward pass's x and y and the output's gradient dy: each window's
// gradient goes to its maximum.
func (p *Pool) Backward(y, dy, x, dx *Buffer) error {
	r := p.r
	r.callMu.Lock()
	defer r.callMu.Unlock()
	a, b := scalarsFor(p.elem)
	return r.dnnCheck("cudnnPoolingBackward", r.dnn.poolBackward(r.hDNN, p.pool, a, p.y, y.ptr, p.y, dy.ptr, p.x, x.ptr, b, p.x, dx.ptr))
}

// Close releases the descriptors; it is idempotent.
func (p *Pool) Close() error {
	p.r.callMu.Lock()
	defer p.r.callMu.Unlock()
	return p.closeLocked()
}

func (p *Pool) closeLocked() error {
	if p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	for _, d := range []handle{p.x, p.y} {
		if d != 0 {
			errs = append(errs, p.r.dnnCheck("cudnnDestroyTensorDescriptor", p.r.dnn.destroyTensorDesc(d)))
		}
	}
	if p.pool != 0 {
		errs = append(errs, p.r.dnnCheck("cudnnDestroyPoolingDescriptor", p.r.dnn.destroyPoolDesc(p.pool)))
	}
	return errors.Join(errs...)
}
