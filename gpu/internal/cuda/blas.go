package cuda

import "fmt"

// Gemm computes, for row-major matrices on the device,
//
//	c = op(a) · op(b),  op(x) = xᵀ if the flag is set, else x
//
// with op(a) m×k, op(b) k×n and c m×n, in float32 (elem 4) or float64 (elem 8). cuBLAS is column-major: a
// row-major matrix is its transpose there, so it computes cᵀ = op(b)ᵀ · op(a)ᵀ with b first.
func (r *Runtime) Gemm(elem int, transA, transB bool, m, n, k int, a, b, c *Buffer) error {
	need := func(buf *Buffer, rows, cols int, name string) error {
		if buf.bytes < rows*cols*elem {
			return fmt.Errorf("cuda: gemm: %s holds %d bytes, want %dx%d elements of %d", name, buf.bytes, rows, cols, elem)
		}
		return nil
	}
	if err := need(a, m, k, "a"); err != nil {
		return err
	}
	if err := need(b, k, n, "b"); err != nil {
		return err
	}
	if err := need(c, m, n, "c"); err != nil {
		return err
	}
	opA, lda := int32(0), int32(k)
	if transA {
		opA, lda = 1, int32(m)
	}
	opB, ldb := int32(0), int32(n)
	if transB {
		opB, ldb = 1, int32(k)
	}
	r.callMu.Lock()
	defer r.callMu.Unlock()
	switch elem {
	case 4:
		alpha, beta := float32(1), float32(0)
		return r.blasCheck("cublasSgemm", r.blas.sgemm(r.hBLAS, opB, opA, int32(n), int32(m), int32(k), &alpha, b.ptr, ldb, a.ptr, lda, &beta, c.ptr, int32(n)))
	case 8:
		alpha, beta := float64(1), float64(0)
		return r.blasCheck("cublasDgemm", r.blas.dgemm(r.hBLAS, opB, opA, int32(n), int32(m), int32(k), &alpha, b.ptr, ldb, a.ptr, lda, &beta, c.ptr, int32(n)))
	}
	return fmt.Errorf("cuda: gemm: element size %d, want 4 or 8", elem)
}
