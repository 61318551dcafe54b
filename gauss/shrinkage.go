package gauss

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// ShrinkSeparate returns the covariance with the diagonal and the
// off-diagonal entries shrunk separately, as FeCAM does (Goswami et al.,
// NeurIPS 2023; docs/method.md, "Classifier calibration"):
//
//	Sigma' = Sigma + gamma1*V1*I + gamma2*V2*(1 - I) + 1e-8 I
//
// where V1 is the mean of the diagonal of Sigma, V2 the mean of its
// off-diagonal entries and 1 the all-ones matrix. With gamma2 = 0 it is
// Shrink(cov, gamma1), bit for bit. It panics if gamma1 or gamma2 is
// negative or NaN.
func ShrinkSeparate(cov mat.Symmetric, gamma1, gamma2 float64) *mat.SymDense {
	if !(gamma2 >= 0) {
		panic(fmt.Sprintf("gauss: shrink: off-diagonal gamma %v is not >= 0", gamma2))
	}
	out := Shrink(cov, gamma1)
	s := cov.SymmetricDim()
	if gamma2 == 0 || s < 2 {
		return out
	}
	add := gamma2 * meanOffDiagonal(cov)
	for i := range s {
		for j := i + 1; j < s; j++ {
			out.SetSym(i, j, out.At(i, j)+add)
		}
	}
	return out
}

// meanOffDiagonal is the mean of the S(S-1) off-diagonal entries of a.
func meanOffDiagonal(a mat.Symmetric) float64 {
	s := a.SymmetricDim()
	var sum float64
	for i := range s {
		for j := i + 1; j < s; j++ {
			sum += a.At(i, j)
		}
	}
	return 2 * sum / float64(s*(s-1))
}

// PoolCovariances returns the class covariances blended with their mean,
// the pooled within-class covariance of a class-balanced set (as linear
// discriminant analysis shares one covariance among all classes):
//
//	Sigma_c <- (1 - lambda) * Sigma_c + lambda * (1/K) sum_k Sigma_k
//
// With lambda = 0 it returns the classes' own matrices; with 1 every class
// has the pooled one. It panics if lambda is outside [0, 1] or the
// dimensions differ.
func PoolCovariances(protos []Gaussian, lambda float64) []mat.Symmetric {
	if !(lambda >= 0 && lambda <= 1) {
		panic(fmt.Sprintf("gauss: pool covariances: lambda %v outside [0, 1]", lambda))
	}
	out := make([]mat.Symmetric, len(protos))
	if lambda == 0 {
		for c, p := range protos {
			out[c] = p.Cov
		}
		return out
	}
	s := protos[0].Dim()
	pooled := mat.NewSymDense(s, nil)
	for _, p := range protos {
		pooled.AddSym(pooled, p.Cov)
	}
	pooled.ScaleSym(lambda/float64(len(protos)), pooled)
	for c, p := range protos {
		blend := mat.NewSymDense(s, nil)
		blend.ScaleSym(1-lambda, p.Cov)
		blend.AddSym(blend, pooled)
		out[c] = blend
	}
	return out
}

// classShrink returns gamma1 for class cls: Shrink plus AgeShrink per task
// learned since the class's own (opts.Ages).
func (opts ClassifierOptions) classShrink(cls int) float64 {
	if opts.AgeShrink == 0 || opts.Ages == nil {
		return opts.Shrink
	}
	return opts.Shrink + opts.AgeShrink*float64(opts.Ages[cls])
}

// classBias returns AgeBias per task learned since the class's own, the
// part of b_c that balances old against new classes.
func (opts ClassifierOptions) classBias(cls int) float64 {
	if opts.AgeBias == 0 || opts.Ages == nil {
		return 0
	}
	return opts.AgeBias * float64(opts.Ages[cls])
}

// validate checks the options (Validate) and the class ages for k
// classes.
func (opts ClassifierOptions) validate(k int) error {
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("gauss: classifier: %w", err)
	}
	if opts.Ages != nil && len(opts.Ages) != k {
		return fmt.Errorf("gauss: classifier: %d class ages for %d classes: %w", len(opts.Ages), k, ErrShape)
	}
	for c, a := range opts.Ages {
		if a < 0 {
			return fmt.Errorf("gauss: classifier: class %d has age %d, want >= 0", c, a)
		}
	}
	return nil
}
