// Package cudaops provides gorgonia ops that compute on an NVIDIA GPU through package cuda, each with its
// gradients: the 2-D convolution, max pooling and training-mode batch norm (cuDNN), the matrix product
// (cuBLAS), and ReLU and GELU (kernels compiled at run time by NVRTC). They are ordinary gorgonia Ops,
// built, differentiated (G.Grad) and run on a G.TapeMachine like the CPU ops of models/ops, whose
// conventions they share: NCHW, construction errors wrapping ops.ErrShape, forward and backward in one
// RunAll. Convolution, pooling and product take float32 or float64; batch norm, ReLU and GELU float32.
// Check compares them with the CPU ops (bicyc doctor --gpu).
//
// This is bicyc's own GPU path inside gorgonia graphs, not gorgonia's CUDA backend (build tag cuda), which
// cannot serve: it needs nvcc at build time, its bindings do not build against CUDA 13 or cuDNN 9, and it
// keeps convolutions on the CPU (docs/gpu.md).
//
// Building a graph needs no GPU: the CUDA libraries are loaded (cuda.Open) when an op first runs, and a
// machine without them gets an error wrapping cuda.ErrUnavailable from RunAll.
//
// Data movement in this first slice: each op keeps its device buffers, allocated on its first run from the
// fixed graph shapes and reused by every later step. A forward op uploads its inputs and downloads its
// output; its gradient ops reuse the forward inputs already on the device and upload the incoming gradient
// once for both. Values between ops still pass through host memory, because gorgonia's values here are
// host tensors; keeping whole steps on the device needs device-resident values for every op of the step
// (the next slices of issue 32).
//
// Memory: the buffers stay allocated until Release(g) frees those of a graph that will not run again.
//
// Concurrency: an op instance owns its buffers; a graph must not be run by two machines at once.
package cudaops
