// Package ops provides fast neural-network operations for gorgonia graphs on the CPU: 2-D convolution,
// per-channel bias, batch normalisation with an optional fused ReLU, 2x2 max pooling, ReLU and global average
// pooling.
//
// All image tensors are NCHW (batch, channels, height, width), row-major and contiguous. Every op works on
// float32 (the dtype of model tensors) and float64 (used by the gradient checks); the inputs of one op must
// share a dtype.
//
// Each function adds a custom gorgonia Op to the graph of its inputs. The ops are differentiable through
// gorgonia's symbolic differentiation (G.Grad / G.Grad-based solvers) and run on a G.TapeMachine; they do not
// implement the Lisp machine's DoDiff path. Heavy loops are split across goroutines (see SetThreads) and
// matrix products go through the BLAS registered with G.Use (for example OpenBLAS via
// gonum.org/v1/netlib/blas/netlib): the package does not register a BLAS itself.
//
// Op instances keep work buffers sized once from the fixed graph shapes, so a graph must not be run by two
// machines at the same time. Values returned by an op may be reused by the op on the next run, as gorgonia's
// own ops reuse registers: copy a node's value (or use G.Read) to keep it across runs.
package ops
