package gauss

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// Affine is a linear map with offset between two S-dimensional feature
// spaces, y = W^T x + b, stored as W [S,S] and b [S]. It is the least-squares
// alternative to the adapter A that the trainer scores on held-out features.
// An Affine is immutable once fitted and safe for concurrent use.
type Affine struct {
	W *mat.Dense // [S,S]: y_j = sum_i x_i W_ij + b_j
	B []float64  // [S]
}

// FitAffine fits y ≈ W^T x + b to n row pairs of x and y ([n,S] row-major
// each) by ridge regression toward the identity:
//
//	min ||X W + 1 b^T - Y||^2 + lambda ||W - I||^2,   lambda = ridge * tr(Xc^T Xc) / S
//
// with Xc the centred rows: b is not penalised. Shrinking toward the
// identity, not toward zero, keeps directions the rows do not span
// unchanged, so a fit on a few dozen pairs of a small task moves old
// prototypes only where the data say the features moved. ridge must be
// positive; n may be smaller than S.
func FitAffine(x, y []float32, n, s int, ridge float64) (Affine, error) {
	if n < 2 || s < 1 {
		return Affine{}, fmt.Errorf("gauss: affine fit on %d rows of %d: %w", n, s, ErrShape)
	}
	if !(ridge > 0) {
		return Affine{}, fmt.Errorf("gauss: affine fit: ridge %g must be positive", ridge)
	}
	for _, rows := range [][]float32{x, y} {
		if err := checkRows(rows, n, s); err != nil {
			return Affine{}, fmt.Errorf("gauss: affine fit: %w", err)
		}
	}
	mx, my := columnMeans(x, n, s), columnMeans(y, n, s)
	xc, yc := mat.NewDense(n, s, nil), mat.NewDense(n, s, nil)
	for r := 0; r < n; r++ {
		for c := 0; c < s; c++ {
			xc.Set(r, c, float64(x[r*s+c])-mx[c])
			yc.Set(r, c, float64(y[r*s+c])-my[c])
		}
	}
	var gram mat.Dense
	gram.Mul(xc.T(), xc)
	lambda := ridge * mat.Trace(&gram) / float64(s)
	if lambda == 0 {
		lambda = ridge
	}
	var rhs mat.Dense
	rhs.Mul(xc.T(), yc)
	for i := 0; i < s; i++ {
		gram.Set(i, i, gram.At(i, i)+lambda)
		rhs.Set(i, i, rhs.At(i, i)+lambda)
	}
	var w mat.Dense
	if err := w.Solve(&gram, &rhs); err != nil {
		return Affine{}, fmt.Errorf("gauss: affine fit: %w", err)
	}
	b := make([]float64, s)
	for j := 0; j < s; j++ {
		b[j] = my[j]
		for i := 0; i < s; i++ {
			b[j] -= mx[i] * w.At(i, j)
		}
	}
	return Affine{W: &w, B: b}, nil
}

// Map applies the affine map to n rows of x ([n,S] row-major); it has the
// signature of a FeatureMap.
func (a Affine) Map(x []float32, n int) ([]float32, error) {
	s := len(a.B)
	if len(x) != n*s {
		return nil, fmt.Errorf("%w: affine map: %d values for %d rows of %d", ErrShape, len(x), n, s)
	}
	out := make([]float32, n*s)
	for r := 0; r < n; r++ {
		for j := 0; j < s; j++ {
			v := a.B[j]
			for i := 0; i < s; i++ {
				v += float64(x[r*s+i]) * a.W.At(i, j)
			}
			out[r*s+j] = float32(v)
		}
	}
	return out, nil
}

// Transport returns the exact image of g under the affine map, with no
// sampling:
//
//	mu' = W^T mu + b,   Sigma' = W^T Sigma W
func (a Affine) Transport(g Gaussian) (Gaussian, error) {
	if err := g.Validate(); err != nil {
		return Gaussian{}, fmt.Errorf("gauss: affine transport: %w", err)
	}
	s := len(a.B)
	if g.Dim() != s {
		return Gaussian{}, fmt.Errorf("%w: affine transport of a %d-dim Gaussian by a %d-dim map", ErrShape, g.Dim(), s)
	}
	mean := make([]float64, s)
	mat.NewVecDense(s, mean).MulVec(a.W.T(), mat.NewVecDense(s, append([]float64(nil), g.Mean...)))
	for j := range mean {
		mean[j] += a.B[j]
	}
	var tmp, full mat.Dense
	tmp.Mul(a.W.T(), g.Cov)
	full.Mul(&tmp, a.W)
	cov := mat.NewSymDense(s, nil)
	for i := 0; i < s; i++ {
		for j := i; j < s; j++ {
			cov.SetSym(i, j, (full.At(i, j)+full.At(j, i))/2)
		}
	}
	return Gaussian{Mean: mean, Cov: cov}, nil
}

// MeanSquaredError is the mean over n rows and S columns of (a - b)^2, the
// MSE of the alignment losses; a and b are [n,S] row-major.
func MeanSquaredError(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		panic(fmt.Sprintf("gauss: mean squared error of %d and %d values", len(a), len(b)))
	}
	var sum float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		sum += d * d
	}
	return sum / float64(len(a))
}
