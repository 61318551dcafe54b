package gauss

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Ridge is added to the diagonal of every estimated covariance, as the
// authors' code does after estimation and after transport (docs/method.md,
// "Stage II", steps 2 and 3).
const Ridge = 1e-8

// Sentinel errors. Errors returned by this package wrap one of them, so
// callers can branch with errors.Is.
var (
	// ErrTooFewSamples: fewer rows than the estimate needs (two for an
	// unbiased covariance, one for a mean).
	ErrTooFewSamples = errors.New("too few samples")
	// ErrNonFinite: a NaN or infinite value in features or parameters.
	ErrNonFinite = errors.New("non-finite value")
	// ErrShape: lengths or dimensions that do not agree.
	ErrShape = errors.New("shape mismatch")
	// ErrNotPositiveDefinite: a covariance that no repair could factorise.
	ErrNotPositiveDefinite = errors.New("matrix is not positive definite")
)

// Gaussian is a class prototype N(Mean, Cov) in an S-dimensional feature
// space. Mean has length S and Cov is S x S. The Gaussian owns both; copy
// them before modifying a Gaussian that is shared.
type Gaussian struct {
	Mean []float64
	Cov  *mat.SymDense
}

// Dim returns S, the length of the mean.
func (g Gaussian) Dim() int { return len(g.Mean) }

// Validate reports whether g is well formed: a non-empty mean, a covariance
// of the same dimension, and finite entries. It does not test positive
// definiteness (Cholesky repairs what it can and reports the rest).
func (g Gaussian) Validate() error {
	s := len(g.Mean)
	if s == 0 {
		return fmt.Errorf("gauss: empty mean: %w", ErrShape)
	}
	if g.Cov == nil || g.Cov.IsEmpty() {
		return fmt.Errorf("gauss: missing covariance: %w", ErrShape)
	}
	if c := g.Cov.SymmetricDim(); c != s {
		return fmt.Errorf("gauss: mean has %d entries but covariance is %dx%d: %w", s, c, c, ErrShape)
	}
	for i, v := range g.Mean {
		if !isFinite(v) {
			return fmt.Errorf("gauss: mean[%d] = %v: %w", i, v, ErrNonFinite)
		}
	}
	for i := range s {
		for j := i; j < s; j++ {
			if v := g.Cov.At(i, j); !isFinite(v) {
				return fmt.Errorf("gauss: covariance[%d][%d] = %v: %w", i, j, v, ErrNonFinite)
			}
		}
	}
	return nil
}

// Estimate returns the mean and the unbiased covariance of the n rows of x,
// an [n, s] row-major matrix, plus Ridge on the diagonal (docs/method.md, "Stage
// II" step 3):
//
//	mu    = (1/n) sum_i x_i
//	Sigma = (1/(n-1)) sum_i (x_i - mu)(x_i - mu)^T + 1e-8 I
//
// It needs n >= 2 and returns an error wrapping ErrTooFewSamples otherwise;
// for such classes the trainer should call EstimateDiagonal with the
// MeanVariance of the classes already estimated. A NaN or infinite feature
// gives an error wrapping ErrNonFinite that names its row, and len(x) != n*s
// an error wrapping ErrShape. With n <= s the sample covariance is singular
// and only the ridge keeps it positive definite; the classifier's shrinkage
// makes such prototypes usable.
func Estimate(x []float32, n, s int) (Gaussian, error) {
	if err := checkRows(x, n, s); err != nil {
		return Gaussian{}, err
	}
	if n < 2 {
		return Gaussian{}, fmt.Errorf("gauss: estimate: %d row(s), an unbiased covariance needs at least 2: %w", n, ErrTooFewSamples)
	}
	mean := columnMeans(x, n, s)
	centred := mat.NewDense(n, s, nil)
	for i := range n {
		row := centred.RawRowView(i)
		for j := range s {
			row[j] = float64(x[i*s+j]) - mean[j]
		}
	}
	cov := mat.NewSymDense(s, nil)
	cov.SymOuterK(1/float64(n-1), centred.T())
	addDiagonal(cov, Ridge)
	return Gaussian{Mean: mean, Cov: cov}, nil
}

// EstimateDiagonal is the fallback for classes with too few rows for
// Estimate. It returns the mean of the n >= 1 rows of x ([n, s] row-major)
// and a diagonal covariance whose entries shrink the per-dimension unbiased
// sample variance towards priorVariance, as if one extra observation of
// variance priorVariance had been seen:
//
//	v_j   = ((n-1) var_j + priorVariance) / n     (v_j = priorVariance when n = 1)
//	Sigma = diag(v) + 1e-8 I
//
// Use MeanVariance of the classes already estimated in the same task (or 1
// when there are none) as priorVariance. It panics if priorVariance is not a
// positive finite number; data errors are returned as for Estimate.
func EstimateDiagonal(x []float32, n, s int, priorVariance float64) (Gaussian, error) {
	if !(priorVariance > 0) || math.IsInf(priorVariance, 1) {
		panic(fmt.Sprintf("gauss: prior variance %v is not a positive finite number", priorVariance))
	}
	if err := checkRows(x, n, s); err != nil {
		return Gaussian{}, err
	}
	if n < 1 {
		return Gaussian{}, fmt.Errorf("gauss: estimate diagonal: no rows: %w", ErrTooFewSamples)
	}
	mean := columnMeans(x, n, s)
	cov := mat.NewSymDense(s, nil)
	for j := range s {
		var ss float64
		for i := range n {
			d := float64(x[i*s+j]) - mean[j]
			ss += d * d
		}
		// ss = (n-1) var_j, so no division is needed for the blend.
		cov.SetSym(j, j, (ss+priorVariance)/float64(n)+Ridge)
	}
	return Gaussian{Mean: mean, Cov: cov}, nil
}

// MeanVariance returns the average over the given Gaussians of the mean
// diagonal of their covariances,
//
//	(1/K) sum_c tr(Sigma_c) / S,
//
// the prior variance that EstimateDiagonal should use. It returns NaN for an
// empty slice.
func MeanVariance(gs []Gaussian) float64 {
	if len(gs) == 0 {
		return math.NaN()
	}
	var sum float64
	for _, g := range gs {
		sum += meanDiagonal(g.Cov)
	}
	return sum / float64(len(gs))
}

// Symmetrize returns (A + A^T)/2 for a square matrix A, the way to turn a
// product such as W Sigma W^T, symmetric only up to rounding, into a
// SymDense. It panics if A is not square.
func Symmetrize(a mat.Matrix) *mat.SymDense {
	r, c := a.Dims()
	if r != c {
		panic(fmt.Sprintf("gauss: symmetrize: matrix is %dx%d, not square", r, c))
	}
	out := mat.NewSymDense(r, nil)
	for i := range r {
		for j := i; j < r; j++ {
			out.SetSym(i, j, 0.5*(a.At(i, j)+a.At(j, i)))
		}
	}
	return out
}

// Shrink returns the shrunk covariance used by the classifier (docs/method.md,
// "Classifier"; the authors' shrink_cov with alpha1 = gamma):
//
//	Sigma' = Sigma + gamma * (tr(Sigma)/S) * I + 1e-8 I
//
// A SymDense stores one triangle, so the result is symmetric by
// construction. It panics if gamma is negative or NaN.
func Shrink(cov mat.Symmetric, gamma float64) *mat.SymDense {
	if !(gamma >= 0) {
		panic(fmt.Sprintf("gauss: shrink: gamma %v is not >= 0", gamma))
	}
	out := mat.NewSymDense(cov.SymmetricDim(), nil)
	out.CopySym(cov)
	addDiagonal(out, gamma*meanDiagonal(cov)+Ridge)
	return out
}

// checkRows validates an [n, s] row-major feature matrix from outside.
func checkRows(x []float32, n, s int) error {
	if n < 0 || s <= 0 {
		panic(fmt.Sprintf("gauss: invalid shape [%d, %d]", n, s))
	}
	if len(x) != n*s {
		return fmt.Errorf("gauss: %d values for %d rows of dimension %d (want %d): %w", len(x), n, s, n*s, ErrShape)
	}
	for i, v := range x {
		if !isFinite(float64(v)) {
			return fmt.Errorf("gauss: row %d, column %d is %v: %w", i/s, i%s, v, ErrNonFinite)
		}
	}
	return nil
}

func columnMeans(x []float32, n, s int) []float64 {
	mean := make([]float64, s)
	for i := range n {
		for j, v := range x[i*s : (i+1)*s] {
			mean[j] += float64(v)
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	return mean
}

func meanDiagonal(a mat.Symmetric) float64 {
	s := a.SymmetricDim()
	var tr float64
	for i := range s {
		tr += a.At(i, i)
	}
	return tr / float64(s)
}

func addDiagonal(a *mat.SymDense, v float64) {
	for i := range a.SymmetricDim() {
		a.SetSym(i, i, a.At(i, i)+v)
	}
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
