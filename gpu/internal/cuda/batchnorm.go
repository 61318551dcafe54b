package cuda

import (
	"errors"
	"fmt"
)

const bnSpatial = 1 // CUDNN_BATCHNORM_SPATIAL: one mean and variance per channel over N, H and W

// BatchNorm holds the cuDNN descriptors of one float32 batch normalisation of [N,C,H,W] in training mode.
// Close releases them.
type BatchNorm struct {
	r      *Runtime
	x, p   handle // the input's descriptor and the derived [1,C,1,1] one of the per-channel vectors
	closed bool
}

// NewBatchNorm describes a float32 batch normalisation of an [n,c,h,w] tensor to cuDNN.
func (r *Runtime) NewBatchNorm(n, c, h, w int) (*BatchNorm, error) {
	if n < 1 || c < 1 || h < 1 || w < 1 || n*h*w < 2 {
		return nil, fmt.Errorf("cuda: batch norm: bad shape [%d,%d,%d,%d]", n, c, h, w)
	}
	b := &BatchNorm{r: r}
	r.callMu.Lock()
	defer r.callMu.Unlock()
	err := errors.Join(
		r.dnnCheck("cudnnCreateTensorDescriptor", r.dnn.createTensorDesc(&b.x)),
		r.dnnCheck("cudnnCreateTensorDescriptor", r.dnn.createTensorDesc(&b.p)),
	)
	if err == nil {
		err = r.dnnCheck("cudnnSetTensor4dDescriptor(x)", r.dnn.setTensor4d(b.x, formatNCHW, 0, int32(n), int32(c), int32(h), int32(w)))
	}
	if err == nil {
		err = r.dnnCheck("cudnnDeriveBNTensorDescriptor", r.dnn.deriveBNDesc(b.p, b.x, bnSpatial))
	}
	if err != nil {
		b.closeLocked()
		return nil, fmt.Errorf("cuda: batch norm [%d,%d,%d,%d]: %w", n, c, h, w, err)
	}
	return b, nil
}

// ForwardTraining normalises x into y with the batch's statistics and γ (scale), β (bias):
//
//	y = γ·(x-μ)/sqrt(σ²+eps) + β
//
// moves the running mean and variance towards the batch's by momentum (cuDNN's exponential average
// factor), and saves μ and 1/sqrt(σ²+eps) for Backward.
func (b *BatchNorm) ForwardTraining(x, y, scale, bias, runMean, runVar, saveMean, saveInvVar *Buffer, momentum, eps float64) error {
	r := b.r
	r.callMu.Lock()
	defer r.callMu.Unlock()
	one, zero := scalarsFor(4)
	return r.dnnCheck("cudnnBatchNormalizationForwardTraining", r.dnn.bnForwardTraining(r.hDNN, bnSpatial, one, zero,
		b.x, x.ptr, b.x, y.ptr, b.p, scale.ptr, bias.ptr, momentum, runMean.ptr, runVar.ptr, eps, saveMean.ptr, saveInvVar.ptr))
}

// Backward computes the gradients of x, γ and β from the output's gradient dy and what ForwardTraining saved.
func (b *BatchNorm) Backward(x, dy, dx, scale, dScale, dBias, saveMean, saveInvVar *Buffer, eps float64) error {
	r := b.r
	r.callMu.Lock()
	defer r.callMu.Unlock()
	one, zero := scalarsFor(4)
	return r.dnnCheck("cudnnBatchNormalizationBackward", r.dnn.bnBackward(r.hDNN, bnSpatial, one, zero, one, zero,
		b.x, x.ptr, b.x, dy.ptr, b.x, dx.ptr, b.p, scale.ptr, dScale.ptr, dBias.ptr, eps, saveMean.ptr, saveInvVar.ptr))
}

// Close releases the descriptors; it is idempotent.
func (b *BatchNorm) Close() error {
	b.r.callMu.Lock()
	defer b.r.callMu.Unlock()
	return b.closeLocked()
}

func (b *BatchNorm) closeLocked() error {
	if b.closed {
		return nil
	}
	b.closed = true
	var errs []error
	for _, d := range []handle{b.x, b.p} {
		if d != 0 {
			errs = append(errs, b.r.dnnCheck("cudnnDestroyTensorDescriptor", b.r.dnn.destroyTensorDesc(d)))
		}
	}
	return errors.Join(errs...)
}
