// Package ops provides fast neural-network operations for gorgonia graphs on the CPU: 2-D convolution,
// per-channel bias, batch normalisation with an optional fused ReLU, 2x2 max pooling, ReLU and global average
// pooling, each with its gradient. It also holds the method-specific ops GELU, StopGradient, Cholesky and
// AntiCollapse.
//
// Image tensors are NCHW (batch, channels, height, width), row-major and contiguous. Every op works on
// float32 (the dtype of model tensors) and float64 (used by the gradient checks); the inputs of one op must
// share a dtype. Construction errors (wrong rank, sizes or dtype) wrap ErrShape.
//
// Each function adds custom gorgonia Ops to the graph of its inputs. They are differentiated symbolically
// (G.Grad) and run on a G.TapeMachine; they do not implement the Lisp machine's DoDiff path. Their loops are
// split across goroutines (see SetThreads), and matrix products go through the BLAS registered with G.Use.
// Call UseOpenBLAS once at program start: it registers OpenBLAS and runs it single-threaded so that the
// ops' own goroutines share the cores with it instead of competing with its spinning worker threads.
//
// Ownership and concurrency: op instances keep their output tensors and work buffers, sized once from the
// fixed graph shapes, and reuse them on every run, as gorgonia reuses registers; copy a value (or use G.Read)
// to keep it beyond the next run. Some gradient ops read state their forward op saved in the same run (the
// convolution's patch matrix, the max-pool winners, the batch-norm statistics, GELU's derivative), so a graph must run forward
// and backward in one RunAll and must not be run by two machines at the same time. The package-level
// functions are safe for concurrent use.
package ops
