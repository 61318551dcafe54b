package gauss

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// SquaredMahalanobis returns the squared Mahalanobis distance of x from g,
//
//	d^2 = (x - mu)^T Sigma^-1 (x - mu) = || L^-1 (x - mu) ||^2,
//
// by a triangular solve with the Cholesky factor (a repaired one if Sigma
// needs it), never an explicit inverse. Errors wrap ErrShape, ErrNonFinite or
// ErrNotPositiveDefinite.
func (g Gaussian) SquaredMahalanobis(x []float64) (float64, error) {
	if err := g.Validate(); err != nil {
		return 0, fmt.Errorf("gauss: mahalanobis: %w", err)
	}
	if len(x) != g.Dim() {
		return 0, fmt.Errorf("gauss: mahalanobis: point has %d entries, Gaussian %d: %w", len(x), g.Dim(), ErrShape)
	}
	chol, _, err := Cholesky(g.Cov)
	if err != nil {
		return 0, fmt.Errorf("gauss: mahalanobis: %w", err)
	}
	d := make([]float64, len(x))
	for i := range x {
		if math.IsNaN(x[i]) || math.IsInf(x[i], 0) {
			return 0, fmt.Errorf("gauss: mahalanobis: point[%d] = %v: %w", i, x[i], ErrNonFinite)
		}
		d[i] = x[i] - g.Mean[i]
	}
	return whitenedNormSq(chol, d), nil
}

// KL returns the Kullback-Leibler divergence KL(N0 || N1) (paper, eq.
// kl-one-way):
//
//	KL = 1/2 [ tr(Sigma1^-1 Sigma0) + (mu1 - mu0)^T Sigma1^-1 (mu1 - mu0)
//	           - S + ln det Sigma1 - ln det Sigma0 ]
//
// computed from Cholesky factors: tr(Sigma1^-1 Sigma0) = ||L1^-1 L0||_F^2. The
// paper evaluates it on regularised covariances Sigma + eps I; Drift does
// that, KL uses the covariances as given (repaired by Cholesky if needed).
// Errors wrap ErrShape, ErrNonFinite or ErrNotPositiveDefinite.
func KL(n0, n1 Gaussian) (float64, error) {
	if err := checkPair(n0, n1); err != nil {
		return 0, fmt.Errorf("gauss: kl: %w", err)
	}
	c0, _, err := Cholesky(n0.Cov)
	if err != nil {
		return 0, fmt.Errorf("gauss: kl: first covariance: %w", err)
	}
	c1, _, err := Cholesky(n1.Cov)
	if err != nil {
		return 0, fmt.Errorf("gauss: kl: second covariance: %w", err)
	}
	s := n0.Dim()
	var l0, l1 mat.TriDense
	c0.LTo(&l0)
	c1.LTo(&l1)
	// M = L1^-1 L0, solved in place on a dense copy of L0.
	m := mat.DenseCopyOf(&l0)
	blas64.Trsm(blas.Left, blas.NoTrans, 1, l1.RawTriangular(), m.RawMatrix())
	trace := mat.Norm(m, 2)
	trace *= trace
	d := make([]float64, s)
	for i := range d {
		d[i] = n1.Mean[i] - n0.Mean[i]
	}
	quad := whitenedNormSq(c1, d)
	return 0.5 * (trace + quad - float64(s) + c1.LogDet() - c0.LogDet()), nil
}

// SymmetricKL returns KL(N0 || N1) + KL(N1 || N0) (paper, eq. sym-kl).
func SymmetricKL(n0, n1 Gaussian) (float64, error) {
	a, err := KL(n0, n1)
	if err != nil {
		return 0, err
	}
	b, err := KL(n1, n0)
	if err != nil {
		return 0, err
	}
	return a + b, nil
}

// MeanL2 returns ||mu0 - mu1||_2 (paper, eq. mu-l2). It panics if the means
// differ in length.
func MeanL2(n0, n1 Gaussian) float64 {
	if n0.Dim() != n1.Dim() {
		panic(fmt.Sprintf("gauss: mean l2: dimensions %d and %d", n0.Dim(), n1.Dim()))
	}
	var ss float64
	for i := range n0.Mean {
		d := n0.Mean[i] - n1.Mean[i]
		ss += d * d
	}
	return math.Sqrt(ss)
}

// CovFrobenius returns ||Sigma0 - Sigma1||_F (paper, eq. sigma-fro). It panics
// if the covariances differ in size.
func CovFrobenius(n0, n1 Gaussian) float64 {
	s := n0.Cov.SymmetricDim()
	if s != n1.Cov.SymmetricDim() {
		panic(fmt.Sprintf("gauss: cov frobenius: dimensions %d and %d", s, n1.Cov.SymmetricDim()))
	}
	var ss float64
	for i := range s {
		for j := range s {
			d := n0.Cov.At(i, j) - n1.Cov.At(i, j)
			ss += d * d
		}
	}
	return math.Sqrt(ss)
}

// DriftStats are the per-class drift diagnostics of the paper's appendix
// A.3 ("Distribution-Similarity Evaluation Metrics"), comparing a stored
// prototype with the statistics of the class's test features under the
// current backbone. Lower is better.
type DriftStats struct {
	MeanL2       float64 // ||mu_stored - mu_test||_2
	CovFrobenius float64 // ||Sigma_stored - Sigma_test||_F, unregularised
	SymmetricKL  float64 // on Sigma + eps I for both covariances
}

// Drift compares a stored prototype with the test-set estimate of the same
// class. The symmetric KL uses the Tikhonov-regularised covariances
// Sigma + eps*I the paper prescribes ("a small eps > 0"; 1e-6 is a sensible
// choice for unit-scale features); eps must be >= 0. Errors wrap ErrShape,
// ErrNonFinite or ErrNotPositiveDefinite.
func Drift(stored, test Gaussian, eps float64) (DriftStats, error) {
	if !(eps >= 0) {
		panic(fmt.Sprintf("gauss: drift: eps %v is not >= 0", eps))
	}
	if err := checkPair(stored, test); err != nil {
		return DriftStats{}, fmt.Errorf("gauss: drift: %w", err)
	}
	kl, err := SymmetricKL(regularised(stored, eps), regularised(test, eps))
	if err != nil {
		return DriftStats{}, fmt.Errorf("gauss: drift: %w", err)
	}
	return DriftStats{
		MeanL2:       MeanL2(stored, test),
		CovFrobenius: CovFrobenius(stored, test),
		SymmetricKL:  kl,
	}, nil
}

// regularised returns g with eps added to its covariance's diagonal; g is
// not modified.
func regularised(g Gaussian, eps float64) Gaussian {
	cov := mat.NewSymDense(g.Dim(), nil)
	cov.CopySym(g.Cov)
	addDiagonal(cov, eps)
	return Gaussian{Mean: g.Mean, Cov: cov}
}

func checkPair(n0, n1 Gaussian) error {
	if err := n0.Validate(); err != nil {
		return fmt.Errorf("first Gaussian: %w", err)
	}
	if err := n1.Validate(); err != nil {
		return fmt.Errorf("second Gaussian: %w", err)
	}
	if n0.Dim() != n1.Dim() {
		return fmt.Errorf("dimensions %d and %d: %w", n0.Dim(), n1.Dim(), ErrShape)
	}
	return nil
}

// whitenedNormSq returns ||L^-1 d||^2 for the factor L of chol; d is
// overwritten.
func whitenedNormSq(chol *mat.Cholesky, d []float64) float64 {
	var l mat.TriDense
	chol.LTo(&l)
	blas64.Trsv(blas.NoTrans, l.RawTriangular(), blas64.Vector{N: len(d), Inc: 1, Data: d})
	var ss float64
	for _, v := range d {
		ss += v * v
	}
	return ss
}
