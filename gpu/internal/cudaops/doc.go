// Package cudaops provides gorgonia ops that compute on an NVIDIA GPU through package cuda, each with its
// gradients: the 2-D convolution, max pooling and training-mode batch norm (cuDNN), the matrix product
// (cuBLAS), and, through kernels NVRTC compiles at run time from the CUDA C sources of package
// gpu/internal/cudakernels, ReLU and GELU, the channel bias add, global average pooling, the evaluation-mode batch
// norm (optional fused ReLU) and the softmax cross-entropy; and SGD, optim.SGD's update (momentum, weight
// decay, global-norm clipping) as a gorgonia Solver. They are ordinary gorgonia Ops, built, differentiated
// (G.Grad) and run on a G.TapeMachine like the CPU ops of models/ops, whose conventions they share: NCHW,
// construction errors wrapping ops.ErrShape, forward and backward in one RunAll. Convolution, pooling and
// product take float32 or float64; the others float32. gpu.Check compares them with the CPU ops (bicyc doctor
// --gpu, bicyc-gpucheck).
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
// (the next slice). SGD keeps the momentum on the device but uploads weights and gradients and downloads
// the weights each step.
//
// Memory: the buffers stay allocated until Release(g) frees those of a graph that will not run again
// (SGD.Free those of a solver).
//
// Concurrency: an op instance owns its buffers; a graph must not be run by two machines at once.
//
// May import: gpu/internal/cuda, gpu/internal/cudakernels, models/ops, models/optim; only gpu/... can import it.
package cudaops
