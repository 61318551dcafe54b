package ops

import (
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	G "gorgonia.org/gorgonia"
)

// splitGemm is set by UseOpenBLAS, once the BLAS is known to run each call on one thread.
var splitGemm atomic.Bool

// gemm computes c = op(a)·op(b) + beta·c for row-major matrices through the BLAS registered with G.Use, where
// op transposes when the flag is set; op(a) is m×k, op(b) is k×n, c is m×n. After UseOpenBLAS, the larger
// of m and n is split into one block per goroutine, up to threads of them, each multiplied by its own
// single-threaded BLAS call; otherwise one call leaves the threading to the BLAS.
func gemm[T float](threads int, transA, transB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	scaledGemm(threads, transA, transB, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
}

// scaledGemm is gemm with c = alpha·op(a)·op(b) + beta·c.
func scaledGemm[T float](threads int, transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	workers := threads
	// Below about a million multiply-adds a product takes microseconds, less than the goroutines cost.
	if !splitGemm.Load() || m*n*k < 1<<20 {
		workers = 1
	}
	if n >= m {
		parallelFor(n, (n+workers-1)/workers, func(lo, hi int) {
			bOff := lo
			if transB {
				bOff = lo * ldb
			}
			gemmCall(transA, transB, m, hi-lo, k, alpha, a, lda, b[bOff:], ldb, beta, c[lo:], ldc)
		})
		return
	}
	parallelFor(m, (m+workers-1)/workers, func(lo, hi int) {
		aOff := lo * lda
		if transA {
			aOff = lo
		}
		gemmCall(transA, transB, hi-lo, n, k, alpha, a[aOff:], lda, b, ldb, beta, c[lo*ldc:], ldc)
	})
}

// blockBLAS is implemented by a BLAS registered with G.Use that splits its own products (splitBLAS): gemm's
// blocks must call the BLAS underneath it.
type blockBLAS interface{ unsplit() G.BLAS }

func gemmCall[T float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	ta, tb := blas.NoTrans, blas.NoTrans
	if transA {
		ta = blas.Trans
	}
	if transB {
		tb = blas.Trans
	}
	impl := G.WhichBLAS()
	if s, ok := impl.(blockBLAS); ok {
		impl = s.unsplit()
	}
	switch a := any(a).(type) {
	case []float32:
		impl.Sgemm(ta, tb, m, n, k, float32(alpha), a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
	case []float64:
		impl.Dgemm(ta, tb, m, n, k, float64(alpha), a, lda, any(b).([]float64), ldb, float64(beta), any(c).([]float64), ldc)
	}
}
