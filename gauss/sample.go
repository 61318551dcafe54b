package gauss

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// sampleChunk bounds the float64 scratch of Sample to sampleChunk x S values.
const sampleChunk = 4096

// Sample draws n rows from N(g.Mean, g.Cov) and returns them as an [n, S]
// row-major float32 matrix:
//
//	x_i = mu + L e_i,   e_i ~ N(0, I),   L L^T = Sigma (factor from Cholesky)
//
// The standard normals are drawn with rng.NormFloat64, row by row, so a given
// rng state always yields the same samples. A covariance that needs a repair
// (see Cholesky) is sampled through the repaired factor. The error wraps
// ErrShape or ErrNonFinite for an invalid g, or ErrNotPositiveDefinite. It
// panics if n is negative or rng is nil.
func (g Gaussian) Sample(rng *rand.Rand, n int) ([]float32, error) {
	if n < 0 || rng == nil {
		panic(fmt.Sprintf("gauss: sample: n = %d, rng nil = %t", n, rng == nil))
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("gauss: sample: %w", err)
	}
	chol, _, err := Cholesky(g.Cov)
	if err != nil {
		return nil, fmt.Errorf("gauss: sample: %w", err)
	}
	var l mat.TriDense
	chol.LTo(&l)
	s := g.Dim()
	out := make([]float32, n*s)
	buf := make([]float64, min(n, sampleChunk)*s)
	for start := 0; start < n; start += sampleChunk {
		rows := min(sampleChunk, n-start)
		e := blas64.General{Rows: rows, Cols: s, Stride: s, Data: buf[:rows*s]}
		for i := range e.Data {
			e.Data[i] = rng.NormFloat64()
		}
		// Row-vector form of L e_i: E <- E L^T.
		blas64.Trmm(blas.Right, blas.Trans, 1, l.RawTriangular(), e)
		dst := out[start*s : (start+rows)*s]
		for i := range rows {
			for j := range s {
				dst[i*s+j] = float32(e.Data[i*s+j] + g.Mean[j])
			}
		}
	}
	return out, nil
}

// FeatureMap is a batched map of features, such as the adapter A: it takes
// an [n, S] row-major matrix and returns an [n, S'] one. It may split the
// rows into batches as it likes, and must not keep x.
type FeatureMap func(x []float32, n int) ([]float32, error)

// Transport pushes the Gaussian g through f by Monte Carlo, the prototype
// update of docs/method.md ("Stage II", step 2) (the authors use n = 10000):
//
//	u_m ~ N(mu, Sigma),  v_m = f(u_m),  m = 1..n
//	mu'    = (1/n) sum_m v_m
//	Sigma' = (1/(n-1)) sum_m (v_m - mu')(v_m - mu')^T + 1e-8 I
//
// For an affine f(u) = A u + b this converges to (A mu + b, A Sigma A^T) with
// entrywise standard error O(1/sqrt(n)). Sampling is deterministic for a
// given rng. It returns an error wrapping ErrTooFewSamples when n < 2, the
// error of f, ErrShape when f's output is not n rows, and ErrNonFinite when
// f produced NaN or infinity.
func Transport(g Gaussian, f FeatureMap, n int, rng *rand.Rand) (Gaussian, error) {
	if n < 2 {
		return Gaussian{}, fmt.Errorf("gauss: transport: %d sample(s), need at least 2: %w", n, ErrTooFewSamples)
	}
	x, err := g.Sample(rng, n)
	if err != nil {
		return Gaussian{}, fmt.Errorf("gauss: transport: %w", err)
	}
	y, err := f(x, n)
	if err != nil {
		return Gaussian{}, fmt.Errorf("gauss: transport: feature map: %w", err)
	}
	if len(y) == 0 || len(y)%n != 0 {
		return Gaussian{}, fmt.Errorf("gauss: transport: feature map returned %d values for %d rows: %w", len(y), n, ErrShape)
	}
	moved, err := Estimate(y, n, len(y)/n)
	if err != nil {
		return Gaussian{}, fmt.Errorf("gauss: transport: feature map output: %w", err)
	}
	return moved, nil
}
