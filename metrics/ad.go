package metrics

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// The unit band of AD-% (paper, eq. ad_band_metric_unified).
const (
	ADBandLow  = 0.9
	ADBandHigh = 1.1
)

// ADResult is the near-isometry diagnostic of the old <-> new maps.
type ADResult struct {
	// SingularValues of A_hat D_hat, in decreasing order (S values).
	SingularValues []float64
	// Percent is 100 * (number of singular values in [0.9, 1.1]) / S.
	Percent float64
}

// AD computes AD-% in [0.9, 1.1] from paired held-out features of the new
// classes (paper appendix A.3, "AD-% in [0.9, 1.1]"): zOld = f_{t-1}(x) and
// zNew = f_t(x), both [n, S] row-major with row i from the same image. It
// forms the least-squares surrogates with ADSurrogates and passes them to
// ADOfMaps. Errors wrap ErrInvalidAD (mismatched lengths, NaN features).
func AD(zOld, zNew []float32, n, s int) (ADResult, error) {
	a, d, err := ADSurrogates(zOld, zNew, n, s)
	if err != nil {
		return ADResult{}, err
	}
	return ADOfMaps(a, d)
}

// ADSurrogates returns the least-squares maps between paired features. With
// the paper's S x N stacks Z_old = zOld^T and Z_new = zNew^T:
//
//	A_hat = (Z_new Z_old^T)(Z_old Z_old^T)^+    old -> new
//	D_hat = (Z_old Z_new^T)(Z_new Z_new^T)^+    new -> old
//
// where ^+ is the Moore-Penrose pseudo-inverse, computed from the symmetric
// eigendecomposition with eigenvalues below S * 2^-52 * lambda_max treated
// as zero (torch.linalg.pinv's default cut-off, max(m, n) * eps * sigma_max).
// Features are not centred, as in the paper. Errors wrap
// ErrInvalidAD.
func ADSurrogates(zOld, zNew []float32, n, s int) (a, d *mat.Dense, err error) {
	if n < 1 || s < 1 {
		return nil, nil, fmt.Errorf("metrics: ad: %d rows of dimension %d: %w", n, s, ErrInvalidAD)
	}
	old, err := featureMatrix("old", zOld, n, s)
	if err != nil {
		return nil, nil, err
	}
	cur, err := featureMatrix("new", zNew, n, s)
	if err != nil {
		return nil, nil, err
	}
	// In row form Z Z^T = X^T X and Z_new Z_old^T = X_new^T X_old.
	var newOld, oldNew mat.Dense
	newOld.Mul(cur.T(), old)
	oldNew.Mul(old.T(), cur)
	a = new(mat.Dense)
	a.Mul(&newOld, pinvGram(old))
	d = new(mat.Dense)
	d.Mul(&oldNew, pinvGram(cur))
	return a, d, nil
}

// ADOfMaps returns the singular values of A D and the share of them in
// [ADBandLow, ADBandHigh]. A and D are S x S; when the adapter or the
// distiller is a single linear layer its weight can stand in for the
// surrogate (paper appendix A.3). Mismatched or non-square maps and NaN
// entries give errors wrapping ErrInvalidAD.
func ADOfMaps(a, d mat.Matrix) (ADResult, error) {
	ar, ac := a.Dims()
	dr, dc := d.Dims()
	if ar != ac || dr != dc || ar != dr {
		return ADResult{}, fmt.Errorf("metrics: ad: maps are %dx%d and %dx%d, want two SxS: %w", ar, ac, dr, dc, ErrInvalidAD)
	}
	var prod mat.Dense
	prod.Mul(a, d)
	if !allFinite(&prod) {
		return ADResult{}, fmt.Errorf("metrics: ad: A D has non-finite entries: %w", ErrInvalidAD)
	}
	var svd mat.SVD
	if !svd.Factorize(&prod, mat.SVDNone) {
		return ADResult{}, errors.New("metrics: ad: singular value decomposition did not converge")
	}
	values := svd.Values(nil)
	var in int
	for _, v := range values {
		if v >= ADBandLow && v <= ADBandHigh {
			in++
		}
	}
	return ADResult{SingularValues: values, Percent: 100 * float64(in) / float64(len(values))}, nil
}

// featureMatrix copies an [n, s] float32 feature matrix into a Dense,
// rejecting wrong lengths and non-finite values.
func featureMatrix(name string, z []float32, n, s int) (*mat.Dense, error) {
	if len(z) != n*s {
		return nil, fmt.Errorf("metrics: ad: %s features have %d values, want %d rows x %d: %w", name, len(z), n, s, ErrInvalidAD)
	}
	m := mat.NewDense(n, s, nil)
	data := m.RawMatrix().Data
	for i, v := range z {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("metrics: ad: %s features: row %d, column %d is %v: %w", name, i/s, i%s, v, ErrInvalidAD)
		}
		data[i] = f
	}
	return m, nil
}

// pinvGram returns the pseudo-inverse of the Gram matrix X^T X.
func pinvGram(x *mat.Dense) *mat.Dense {
	_, s := x.Dims()
	var gram mat.SymDense
	gram.SymOuterK(1, x.T())
	var eig mat.EigenSym
	if !eig.Factorize(&gram, true) {
		// EigenSym fails only on non-finite input, which featureMatrix rejects.
		panic("metrics: eigendecomposition of a finite Gram matrix failed")
	}
	values := eig.Values(nil)
	var q mat.Dense
	eig.VectorsTo(&q)
	tol := float64(s) * 0x1p-52 * max(values[len(values)-1], 0)
	inv := make([]float64, s)
	for i, v := range values {
		if v > tol {
			inv[i] = 1 / v
		}
	}
	var qd, out mat.Dense
	qd.Mul(&q, mat.NewDiagDense(s, inv))
	out.Mul(&qd, q.T())
	return &out
}

func allFinite(m *mat.Dense) bool {
	for _, v := range m.RawMatrix().Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
