package gauss

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// Fallback says which path Cholesky took to factorise its argument.
type Fallback int

const (
	// Direct: the matrix itself was positive definite.
	Direct Fallback = iota
	// Jittered: the factor is of Sigma + j*(tr(Sigma)/S)*I for the smallest
	// j in 1e-8, 1e-7, ..., 1e-2 that worked.
	Jittered
	// EigenFloored: the factor is of Q max(Lambda, EigenFloor*tr(Sigma)/S) Q^T,
	// Sigma's eigendecomposition with its eigenvalues raised to a floor.
	EigenFloored
)

// String returns "direct", "jittered" or "eigen-floored".
func (f Fallback) String() string {
	switch f {
	case Direct:
		return "direct"
	case Jittered:
		return "jittered"
	case EigenFloored:
		return "eigen-floored"
	}
	return fmt.Sprintf("Fallback(%d)", int(f))
}

// jitterSteps are the relative jitters Cholesky tries, in order, before it
// floors eigenvalues (docs/method.md, "Stage II": growing jitter, then an
// eigenvalue floor; the method gives no numbers).
var jitterSteps = [...]float64{1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2}

// EigenFloor is the smallest eigenvalue, relative to the mean diagonal, that
// the last-resort repair keeps.
const EigenFloor = 1e-6

// Cholesky factorises a symmetric matrix Sigma = L L^T, repairing it when
// rounding or too few samples have left it indefinite:
//
//  1. factorise Sigma as it is;
//  2. else factorise Sigma + j*m*I for j = 1e-8, 1e-7, ..., 1e-2, m = tr(Sigma)/S
//     (m = 1 when the trace is not positive);
//  3. else floor the eigenvalues of Sigma at EigenFloor*m and factorise
//     Q diag(max(lambda, EigenFloor*m)) Q^T.
//
// The Fallback result says which step succeeded; after a repair the factor is
// of the repaired matrix, not of sym. A mat.Symmetric stores one triangle, so
// sym is symmetric by construction (use Symmetrize on a general product).
// Non-finite entries give an error wrapping ErrNonFinite, and a matrix that
// even step 3 cannot factorise one wrapping ErrNotPositiveDefinite.
func Cholesky(sym mat.Symmetric) (*mat.Cholesky, Fallback, error) {
	s := sym.SymmetricDim()
	for i := range s {
		for j := i; j < s; j++ {
			if v := sym.At(i, j); !isFinite(v) {
				return nil, Direct, fmt.Errorf("gauss: cholesky: entry [%d][%d] is %v: %w", i, j, v, ErrNonFinite)
			}
		}
	}
	var chol mat.Cholesky
	if chol.Factorize(sym) {
		return &chol, Direct, nil
	}
	scale := meanDiagonal(sym)
	if !(scale > 0) {
		scale = 1
	}
	work := mat.NewSymDense(s, nil)
	for _, j := range jitterSteps {
		work.CopySym(sym)
		addDiagonal(work, j*scale)
		if chol.Factorize(work) {
			return &chol, Jittered, nil
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, true) {
		return nil, EigenFloored, fmt.Errorf("gauss: cholesky: eigendecomposition failed: %w", ErrNotPositiveDefinite)
	}
	values := eig.Values(nil)
	floor := EigenFloor * scale
	for i, v := range values {
		values[i] = max(v, floor)
	}
	var q mat.Dense
	eig.VectorsTo(&q)
	var qd mat.Dense
	qd.Mul(&q, mat.NewDiagDense(s, values))
	var rebuilt mat.Dense
	rebuilt.Mul(&qd, q.T())
	if chol.Factorize(Symmetrize(&rebuilt)) {
		return &chol, EigenFloored, nil
	}
	return nil, EigenFloored, fmt.Errorf("gauss: cholesky: eigenvalues floored at %g still not factorisable: %w", floor, ErrNotPositiveDefinite)
}
