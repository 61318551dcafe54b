package cuda

import (
	"errors"
	"fmt"
	"unsafe"
)

// ConvShape is one 2-D cross-correlation: input [N,C,H,W], filters [O,C,K,K], output [N,O,OH,OW], with the
// same stride and zero padding on both axes, as models/ops.Conv2d computes it.
type ConvShape struct {
	N, C, H, W, O, K, Stride, Pad int
}

// Out returns the output's height and width.
func (s ConvShape) Out() (oh, ow int) {
	return (s.H+2*s.Pad-s.K)/s.Stride + 1, (s.W+2*s.Pad-s.K)/s.Stride + 1
}

// The algorithms tried, in order, for each pass (cudnnConvolutionFwdAlgo_t, cudnnConvolutionBwdDataAlgo_t,
// cudnnConvolutionBwdFilterAlgo_t values): implicit precomputed GEMM forward and ALGO_1 for both gradients
// first (classic kernels for NCHW without tensor cores), then implicit GEMM (0), and for the forward pass
// explicit GEMM (2). The first whose workspace query succeeds is used (Conv
// records which); choosing by cuDNN's heuristics (cudnnGetConvolution*Algorithm_v7) is the next step, once
// measured.
var (
	fwdAlgos       = []int32{1, 0, 2}
	bwdDataAlgos   = []int32{1, 0}
	bwdFilterAlgos = []int32{1, 0}
)

const (
	mathFMA          = 3 // CUDNN_FMA_MATH: no tensor-core (TF32) math on float32
	crossCorrelation = 1 // CUDNN_CROSS_CORRELATION
	formatNCHW       = 0
)

// Conv holds the cuDNN descriptors and workspace of one convolution shape. Close releases them.
type Conv struct {
	r                 *Runtime
	shape             ConvShape
	elem              int
	x, y              handle // tensor descriptors
	w                 handle // filter descriptor
	conv              handle
	work              *Buffer
	fwdWS, bdWS, bfWS uintptr
	// Algos are the algorithms chosen for the forward pass, the data gradient and the filter gradient.
	Algos  [3]int32
	closed bool
}

// NewConv describes a convolution of elements of elem bytes (4 float32, 8 float64) to cuDNN.
func (r *Runtime) NewConv(s ConvShape, elem int) (*Conv, error) {
	dataType, err := dnnDataType("conv", elem)
	if err != nil {
		return nil, err
	}
	oh, ow := s.Out()
	if s.N < 1 || s.C < 1 || s.O < 1 || s.K < 1 || s.Stride < 1 || s.Pad < 0 || oh < 1 || ow < 1 {
		return nil, fmt.Errorf("cuda: conv: bad shape %+v", s)
	}
	c := &Conv{r: r, shape: s, elem: elem}
	r.callMu.Lock()
	defer r.callMu.Unlock()
	err = errors.Join(
		r.dnnCheck("cudnnCreateTensorDescriptor", r.dnn.createTensorDesc(&c.x)),
		r.dnnCheck("cudnnCreateTensorDescriptor", r.dnn.createTensorDesc(&c.y)),
		r.dnnCheck("cudnnCreateFilterDescriptor", r.dnn.createFilterDesc(&c.w)),
		r.dnnCheck("cudnnCreateConvolutionDescriptor", r.dnn.createConvDesc(&c.conv)),
	)
	if err == nil {
		err = errors.Join(
			r.dnnCheck("cudnnSetTensor4dDescriptor(x)", r.dnn.setTensor4d(c.x, formatNCHW, dataType, int32(s.N), int32(s.C), int32(s.H), int32(s.W))),
			r.dnnCheck("cudnnSetTensor4dDescriptor(y)", r.dnn.setTensor4d(c.y, formatNCHW, dataType, int32(s.N), int32(s.O), int32(oh), int32(ow))),
			r.dnnCheck("cudnnSetFilter4dDescriptor", r.dnn.setFilter4d(c.w, dataType, formatNCHW, int32(s.O), int32(s.C), int32(s.K), int32(s.K))),
			r.dnnCheck("cudnnSetConvolution2dDescriptor", r.dnn.setConv2d(c.conv, int32(s.Pad), int32(s.Pad), int32(s.Stride), int32(s.Stride), 1, 1, crossCorrelation, dataType)),
			r.dnnCheck("cudnnSetConvolutionMathType", r.dnn.setConvMathType(c.conv, mathFMA)),
		)
	}
	if err == nil {
		err = errors.Join(
			c.choose(0, "cudnnGetConvolutionForwardWorkspaceSize", fwdAlgos, &c.fwdWS, func(a int32, n *uintptr) int32 {
				return r.dnn.fwdWorkspace(r.hDNN, c.x, c.w, c.conv, c.y, a, n)
			}),
			c.choose(1, "cudnnGetConvolutionBackwardDataWorkspaceSize", bwdDataAlgos, &c.bdWS, func(a int32, n *uintptr) int32 {
				return r.dnn.bwdDataWorkspace(r.hDNN, c.w, c.y, c.conv, c.x, a, n)
			}),
			c.choose(2, "cudnnGetConvolutionBackwardFilterWorkspaceSize", bwdFilterAlgos, &c.bfWS, func(a int32, n *uintptr) int32 {
				return r.dnn.bwdFilterWorkspace(r.hDNN, c.x, c.y, c.conv, c.w, a, n)
			}),
		)
	}
	if err == nil {
		c.work, err = r.Alloc(int(max(c.fwdWS, c.bdWS, c.bfWS)))
	}
	if err != nil {
		c.closeLocked()
		return nil, fmt.Errorf("cuda: conv %+v: %w", s, err)
	}
	return c, nil
}

// choose sets Algos[pass] to the first of algos whose workspace query succeeds and *bytes to its workspace;
// the error lists every refusal.
func (c *Conv) choose(pass int, call string, algos []int32, bytes *uintptr, query func(algo int32, bytes *uintptr) int32) error {
	var errs []error
	for _, a := range algos {
		if err := c.r.dnnCheck(fmt.Sprintf("%s(algo %d)", call, a), query(a, bytes)); err != nil {
			errs = append(errs, err)
			continue
		}
		c.Algos[pass] = a
		return nil
	}
	return errors.Join(errs...)
}

// Forward computes y from x and w (device buffers of the shapes of NewConv).
func (c *Conv) Forward(x, w, y *Buffer) error {
	r := c.r
	r.callMu.Lock()
	defer r.callMu.Unlock()
	a, b := c.scalars()
	return r.dnnCheck("cudnnConvolutionForward", r.dnn.convForward(r.hDNN, a, c.x, x.ptr, c.w, w.ptr, c.conv,
		c.Algos[0], c.work.ptr, c.fwdWS, b, c.y, y.ptr))
}

// BackwardData computes the gradient dx of the input from the filters w and the output's gradient dy.
func (c *Conv) BackwardData(w, dy, dx *Buffer) error {
	r := c.r
	r.callMu.Lock()
	defer r.callMu.Unlock()
	a, b := c.scalars()
	return r.dnnCheck("cudnnConvolutionBackwardData", r.dnn.convBackwardData(r.hDNN, a, c.w, w.ptr, c.y, dy.ptr, c.conv,
		c.Algos[1], c.work.ptr, c.bdWS, b, c.x, dx.ptr))
}

// BackwardFilter computes the gradient dw of the filters from the input x and the output's gradient dy.
func (c *Conv) BackwardFilter(x, dy, dw *Buffer) error {
	r := c.r
	r.callMu.Lock()
	defer r.callMu.Unlock()
	a, b := c.scalars()
	return r.dnnCheck("cudnnConvolutionBackwardFilter", r.dnn.convBackwardFilter(r.hDNN, a, c.x, x.ptr, c.y, dy.ptr, c.conv,
		c.Algos[2], c.work.ptr, c.bfWS, b, c.w, dw.ptr))
}

// one and zero are cuDNN's alpha and beta (result = alpha·op + beta·result): float for float32 data, double
// for float64, as cuDNN requires.
var (
	oneF32, zeroF32 = float32(1), float32(0)
	oneF64, zeroF64 = float64(1), float64(0)
)

func (c *Conv) scalars() (alpha, beta unsafe.Pointer) { return scalarsFor(c.elem) }

// dnnDataType returns cuDNN's data type of elements of elem bytes: CUDNN_DATA_FLOAT (0) for 4,
// CUDNN_DATA_DOUBLE (1) for 8; what names the descriptor in the error.
func dnnDataType(what string, elem int) (int32, error) {
	switch elem {
	case 4:
		return 0, nil
	case 8:
		return 1, nil
	}
	return 0, fmt.Errorf("cuda: %s: element size %d, want 4 or 8", what, elem)
}

// scalarsFor returns pointers to 1 and 0 of the element type of elem bytes.
func scalarsFor(elem int) (alpha, beta unsafe.Pointer) {
	if elem == 8 {
		return unsafe.Pointer(&oneF64), unsafe.Pointer(&zeroF64)
	}
	return unsafe.Pointer(&oneF32), unsafe.Pointer(&zeroF32)
}

// Close releases the descriptors and the workspace; it is idempotent.
func (c *Conv) Close() error {
	c.r.callMu.Lock()
	defer c.r.callMu.Unlock()
	return c.closeLocked()
}

func (c *Conv) closeLocked() error {
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	if c.x != 0 {
		errs = append(errs, c.r.dnnCheck("cudnnDestroyTensorDescriptor", c.r.dnn.destroyTensorDesc(c.x)))
	}
	if c.y != 0 {
		errs = append(errs, c.r.dnnCheck("cudnnDestroyTensorDescriptor", c.r.dnn.destroyTensorDesc(c.y)))
	}
	if c.w != 0 {
		errs = append(errs, c.r.dnnCheck("cudnnDestroyFilterDescriptor", c.r.dnn.destroyFilterDesc(c.w)))
	}
	if c.conv != 0 {
		errs = append(errs, c.r.dnnCheck("cudnnDestroyConvolutionDescriptor", c.r.dnn.destroyConvDesc(c.conv)))
	}
	errs = append(errs, c.work.Free())
	return errors.Join(errs...)
}
