// Package ops provides fast neural-network operations for gorgonia graphs on the CPU: 2-D convolution,
// per-channel bias, batch normalisation with an optional fused ReLU, 2x2 max pooling, ReLU, the residual sum
// with an optional fused ReLU (AddReLU), global average pooling and the product x·wᵀ of a linear layer, each
// with its gradient. It also holds the method-specific
// ops GELU, StopGradient, Cholesky, AntiCollapse and NTXent.
//
// Image tensors are NCHW (batch, channels, height, width), row-major and contiguous. Every op works on
// float32 (the dtype of model tensors) and float64 (used by the gradient checks); the inputs of one op must
// share a dtype. Construction errors (wrong rank, sizes or dtype) wrap ErrShape.
//
// Each function adds custom gorgonia Ops to the graph of its inputs. They are differentiated symbolically
// (G.Grad) and run on a G.TapeMachine; they do not implement the Lisp machine's DoDiff path. Their loops are
// split across goroutines (see SetThreads), and matrix products go through the BLAS registered with G.Use.
// Call UseOpenBLAS once at program start: it registers OpenBLAS, runs it single-threaded and splits every
// large product (of these ops and of gorgonia's G.Mul) into one block per goroutine, so that the ops' own
// goroutines share the cores with it instead of competing with its spinning worker threads.
//
// On processors with AVX2 and FMA, the element-wise float32 loops (batch norm, ReLU, bias, GELU, sums)
// run as assembly kernels (package internal/vector), with the portable Go loops as fallback; results may
// differ from the portable ones by float32 rounding (fused multiply-adds, eight-lane sums).
//
// Convolutions are im2col followed by one matrix product per chunk of images, except 3x3 stride-1
// same-padding convolutions with 8 or more channels on even-sized (or large odd-sized) planes, such as
// ResNet blocks and the default backbone's second and third convolutions, which use Winograd's F(2x2, 3x3):
// 16 smaller products per chunk, 2.25 times fewer multiplications, for the forward pass and both gradients.
// On output sides that are multiples of 4 from 8 (ResNet-18's larger stages) the forward pass and the input
// gradient use F(4x4, 3x3) instead, 36 products per chunk and 4 times fewer multiplications, as does the
// filter gradient from 16; its float32 rounding is about ten times F(2x2, 3x3)'s. Strided convolutions with
// kernels wider than the stride whose output has the size of the input's polyphase planes (every other row
// and column for stride 2: ResNet's stride-2 3x3 convolutions and its 7x7 stem) build their patch matrix
// from those planes, one block copy per row, with the same values and, for the input gradient, the same
// sums in the same order as the row-by-row gather (convGeom.phased).
//
// Profiling: SetProfileLabels labels each convolution, batch-norm and max-pooling op's CPU samples with the op
// and its geometry (pprof labels), so that `go tool pprof -tags` splits a training step by layer and pass.
//
// Memory: a convolution processes its batch in chunks of about 1024 output positions (512 for Winograd
// F(2x2, 3x3), 2048 for F(4x4, 3x3)),
// so its patch matrix and similar work buffers are only needed for one chunk per goroutine; they are lent by
// a package-level pool (scratchPool) shared by all ops and graphs, which keeps as many buffers as were in use
// at once.
//
// Ownership and concurrency: op instances keep their output tensors, sized once from the fixed graph
// shapes, and reuse them on every run, as gorgonia reuses registers; copy a value (or use G.Read) to keep it
// beyond the next run. Batch norm and Add/AddReLU may also write over their first input when gorgonia's
// register allocator finds that nothing reads it later (the forward pass of frozen layers, evaluation graphs),
// so the value of such an intermediate node may change before the run ends. Some gradient ops read state their forward op saved in the same run (the max-pool
// winners, the batch-norm statistics, GELU's derivative), so a graph must run forward and backward in one
// RunAll and must not be run by two machines at the same time. The package-level functions are safe for
// concurrent use.
//
// May import: models/ops/internal/vector, kernels; never data, train, export.
package ops
