package ops

import (
	"gonum.org/v1/gonum/blas"
	G "gorgonia.org/gorgonia"
)

// gemm computes c = op(a)·op(b) + beta·c for row-major matrices through the BLAS registered with G.Use, where
// op transposes when the flag is set; op(a) is m×k, op(b) is k×n, c is m×n.
func gemm[T float](transA, transB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	ta, tb := blas.NoTrans, blas.NoTrans
	if transA {
		ta = blas.Trans
	}
	if transB {
		tb = blas.Trans
	}
	switch a := any(a).(type) {
	case []float32:
		G.WhichBLAS().Sgemm(ta, tb, m, n, k, 1, a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
	case []float64:
		G.WhichBLAS().Dgemm(ta, tb, m, n, k, 1, a, lda, any(b).([]float64), ldb, float64(beta), any(c).([]float64), ldc)
	}
}
