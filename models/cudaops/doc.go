// Package cudaops provides gorgonia ops that compute on an NVIDIA GPU through package cuda: the 2-D
// convolution with both gradients (cuDNN) and the matrix product with both gradients (cuBLAS). They are
// ordinary gorgonia Ops, built, differentiated (G.Grad) and run on a G.TapeMachine like the CPU ops of
// models/ops, whose conventions they share: NCHW, float32 or float64, construction errors wrapping
// ops.ErrShape, forward and backward in one RunAll.
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
