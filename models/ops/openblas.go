//go:build cgo

package ops

// #cgo LDFLAGS: -lopenblas
// void openblas_set_num_threads(int num_threads);
import "C"

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// UseOpenBLAS registers OpenBLAS (through gonum's netlib bindings) as gorgonia's BLAS and makes the matrix
// products parallel in Go instead of inside OpenBLAS: OpenBLAS is set to one thread, and every large matrix
// product, of these ops and of stock gorgonia ops (G.Mul), is split into one block per goroutine (see
// SetThreads).
//
// Why: after each multi-threaded call, OpenBLAS's idle worker threads spin in sched_yield for a while; on a
// 2-core machine that spinning took about 40% of the cycles of a training step and starved the parallel loops
// of the other ops.
//
// Call it once at program start, before building or running graphs. It is idempotent and not safe to call
// while a graph runs.
func UseOpenBLAS() {
	G.Use(splitBLAS{})
	setOpenBLASThreads(1)
}

// setOpenBLASThreads sets OpenBLAS's thread count; gemm splits its products across goroutines only while
// OpenBLAS runs on one thread.
func setOpenBLASThreads(n int) {
	C.openblas_set_num_threads(C.int(n))
	splitGemm.Store(n == 1)
}

// splitBLAS is OpenBLAS with its general matrix products split across goroutines by gemm (one block per
// thread, each a single-threaded OpenBLAS call), for the products gorgonia computes itself.
type splitBLAS struct{ netlib.Implementation }

func (splitBLAS) unsplit() G.BLAS { return netlib.Implementation{} }

// Sgemm computes c = alpha·op(a)·op(b) + beta·c (row-major) in blocks across goroutines.
func (splitBLAS) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	scaledGemm(Threads(), tA != blas.NoTrans, tB != blas.NoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Dgemm computes c = alpha·op(a)·op(b) + beta·c (row-major) in blocks across goroutines.
func (splitBLAS) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	scaledGemm(Threads(), tA != blas.NoTrans, tB != blas.NoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
