package gauss

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// transportFixture is a 3-dim Gaussian and an affine map y = A x + b.
var (
	fixtureMean = []float64{1, -2, 0.5}
	fixtureCov  = mat.NewSymDense(3, []float64{
		2, 0.5, 0,
		0.5, 1, 0.3,
		0, 0.3, 0.5,
	})
	fixtureA = mat.NewDense(3, 3, []float64{
		1, 2, 0,
		0, 1, -1,
		0.5, 0, 3,
	})
	fixtureB = []float64{0.1, 0, -1}
)

// affineMap is the FeatureMap x -> A x + b, computed in float64 per row.
func affineMap(a *mat.Dense, b []float64) FeatureMap {
	return func(x []float32, n int) ([]float32, error) {
		r, c := a.Dims()
		out := make([]float32, n*r)
		for i := range n {
			for j := range r {
				v := b[j]
				for k := range c {
					v += a.At(j, k) * float64(x[i*c+k])
				}
				out[i*r+j] = float32(v)
			}
		}
		return out, nil
	}
}

func TestSampleDeterministic(t *testing.T) {
	g := Gaussian{Mean: fixtureMean, Cov: fixtureCov}
	a, err := g.Sample(rand.New(rand.NewPCG(7, 8)), 5000)
	if err != nil {
		t.Fatal(err)
	}
	b, err := g.Sample(rand.New(rand.NewPCG(7, 8)), 5000)
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.Sample(rand.New(rand.NewPCG(7, 9)), 5000)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 5000*3 {
		t.Fatalf("len = %d, want %d", len(a), 5000*3)
	}
	if !slices.Equal(a, b) {
		t.Error("same seed gave different samples")
	}
	if slices.Equal(a, c) {
		t.Error("different seeds gave the same samples")
	}
	empty, err := g.Sample(rand.New(rand.NewPCG(1, 1)), 0)
	if err != nil || len(empty) != 0 {
		t.Errorf("Sample(0) = %d values, %v", len(empty), err)
	}
}

// TestTransportLinear pushes N(mu, Sigma) through y = A x + b and compares the
// re-estimated moments with the closed form (A mu + b, A Sigma A^T + 1e-8 I).
//
// Tolerance: for N samples of a Gaussian with covariance C = A Sigma A^T the
// standard error of the sample mean is sqrt(C_ii / N) and that of the
// unbiased sample covariance entry (i, j) is sqrt((C_ii C_jj + C_ij^2)/(N-1))
// (Wishart variance). Every entry must lie within 5 standard errors (two-sided
// probability 6e-7 per entry; the seed is fixed anyway); at N = 200000 that is
// at most 1.6% of sqrt(C_ii C_jj). The float32 samples add a relative 6e-8,
// far below that. The Frobenius error of the covariance must also fall by more
// than 3x from N = 2000 to N = 200000 (the 1/sqrt(N) rate predicts 10x).
func TestTransportLinear(t *testing.T) {
	g := Gaussian{Mean: fixtureMean, Cov: fixtureCov}
	var wantMean mat.VecDense
	wantMean.MulVec(fixtureA, mat.NewVecDense(3, fixtureMean))
	wantMean.AddVec(&wantMean, mat.NewVecDense(3, fixtureB))
	var as, asat mat.Dense
	as.Mul(fixtureA, fixtureCov)
	asat.Mul(&as, fixtureA.T())
	wantCov := Symmetrize(&asat)

	relErr := make(map[int]float64)
	for i, n := range []int{2000, 200000} {
		moved, err := Transport(g, affineMap(fixtureA, fixtureB), n, rand.New(rand.NewPCG(11, uint64(n))))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		var sq float64
		for r := range 3 {
			se := math.Sqrt(wantCov.At(r, r) / float64(n))
			if d := math.Abs(moved.Mean[r] - wantMean.AtVec(r)); d > 5*se {
				t.Errorf("case %d (N=%d): mean[%d] off by %g, 5 standard errors = %g", i, n, r, d, 5*se)
			}
			for c := range 3 {
				crr, ccc, crc := wantCov.At(r, r), wantCov.At(c, c), wantCov.At(r, c)
				se := math.Sqrt((crr*ccc + crc*crc) / float64(n-1))
				d := moved.Cov.At(r, c) - Ridge*b2f(r == c) - crc
				if math.Abs(d) > 5*se {
					t.Errorf("case %d (N=%d): cov[%d][%d] off by %g, 5 standard errors = %g", i, n, r, c, d, 5*se)
				}
				sq += d * d
			}
		}
		relErr[n] = math.Sqrt(sq) / mat.Norm(wantCov, 2)
		t.Logf("N=%d: relative Frobenius error of the covariance %.2e", n, relErr[n])
	}
	if ratio := relErr[2000] / relErr[200000]; ratio < 3 {
		t.Errorf("error fell only %.2fx from N=2000 to N=200000, want > 3x", ratio)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func TestTransportErrors(t *testing.T) {
	g := Gaussian{Mean: fixtureMean, Cov: fixtureCov}
	errMap := errors.New("adapter failed")
	cases := []struct {
		f    FeatureMap
		n    int
		want error
	}{
		{affineMap(fixtureA, fixtureB), 1, ErrTooFewSamples},
		{func([]float32, int) ([]float32, error) { return nil, errMap }, 10, errMap},
		{func(_ []float32, n int) ([]float32, error) { return make([]float32, 2*n+1), nil }, 10, ErrShape},
		{func(_ []float32, n int) ([]float32, error) {
			out := make([]float32, 2*n)
			out[5] = float32(math.NaN())
			return out, nil
		}, 10, ErrNonFinite},
	}
	for i, c := range cases {
		_, err := Transport(g, c.f, c.n, rand.New(rand.NewPCG(1, 2)))
		if !errors.Is(err, c.want) {
			t.Errorf("case %d: err = %v, want %v", i, err, c.want)
		}
	}
	bad := Gaussian{Mean: []float64{0, math.NaN()}, Cov: mat.NewSymDense(2, []float64{1, 0, 0, 1})}
	if _, err := Transport(bad, affineMap(fixtureA, fixtureB), 10, rand.New(rand.NewPCG(1, 2))); !errors.Is(err, ErrNonFinite) {
		t.Errorf("NaN mean: err = %v, want ErrNonFinite", err)
	}
}
