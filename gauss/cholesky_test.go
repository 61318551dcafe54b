package gauss

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestCholeskyPaths(t *testing.T) {
	cases := []struct {
		name string
		a    *mat.SymDense
		want Fallback
		// maxChange bounds ||L L^T - A||_max relative to the mean diagonal.
		maxChange float64
	}{
		// Positive definite: eigenvalues 1 and 3.
		{"pd", mat.NewSymDense(2, []float64{2, 1, 1, 2}), Direct, 1e-15},
		// Rank one, eigenvalues 0 and 2: the pivot of the second row is
		// exactly 0, so the first jitter (1e-8 * mean diagonal 1) repairs it.
		{"singular", mat.NewSymDense(2, []float64{1, 1, 1, 1}), Jittered, 1e-8 * 1.0001},
		// Indefinite, eigenvalues -1 and 3: no jitter up to 1e-2 helps, the
		// floor raises -1 to 1e-6, changing entries by at most (1+1e-6)/2.
		{"indefinite", mat.NewSymDense(2, []float64{1, 2, 2, 1}), EigenFloored, 0.5 + 1e-6},
		// The zero matrix: mean diagonal 0, so jitter is relative to 1.
		{"zero", mat.NewSymDense(3, nil), Jittered, 1e-8 * 1.0001},
	}
	for i, c := range cases {
		chol, fb, err := Cholesky(c.a)
		if err != nil {
			t.Fatalf("case %d (%s): %v", i, c.name, err)
		}
		if fb != c.want {
			t.Errorf("case %d (%s): fallback %v, want %v", i, c.name, fb, c.want)
		}
		var rebuilt mat.SymDense
		chol.ToSym(&rebuilt)
		var diff mat.Dense
		diff.Sub(&rebuilt, c.a)
		if got := mat.Norm(&diff, math.Inf(1)); got > c.maxChange*float64(c.a.SymmetricDim()) {
			t.Errorf("case %d (%s): ||L L^T - A||_inf = %g, want <= %g", i, c.name, got, c.maxChange)
		}
	}
}

// TestCholeskyEigenFloor checks the floored factor of the indefinite
// [[1, 2], [2, 1]], whose eigenpairs are -1 with q1 = (1, -1)/sqrt 2 and 3 with
// q2 = (1, 1)/sqrt 2. With the floor f = EigenFloor * mean diagonal 1:
//
//	A' = 3 q2 q2^T + f q1 q1^T = [[(3+f)/2, (3-f)/2], [(3-f)/2, (3+f)/2]]
func TestCholeskyEigenFloor(t *testing.T) {
	chol, _, err := Cholesky(mat.NewSymDense(2, []float64{1, 2, 2, 1}))
	if err != nil {
		t.Fatal(err)
	}
	f := EigenFloor
	want := mat.NewSymDense(2, []float64{(3 + f) / 2, (3 - f) / 2, (3 - f) / 2, (3 + f) / 2})
	var got mat.SymDense
	chol.ToSym(&got)
	if !mat.EqualApprox(&got, want, 1e-12) {
		t.Errorf("repaired = %v, want %v", mat.Formatted(&got), mat.Formatted(want))
	}
}

func TestCholeskyNonFinite(t *testing.T) {
	_, _, err := Cholesky(mat.NewSymDense(2, []float64{1, math.NaN(), math.NaN(), 1}))
	if !errors.Is(err, ErrNonFinite) {
		t.Errorf("err = %v, want ErrNonFinite", err)
	}
}

// TestCholeskyRankDeficientCovariance factorises the covariance of 10 samples
// in 64 dimensions (rank 9, plus the 1e-8 ridge), the situation of a class
// with few images (docs/method.md, "Where bicyc departs from the authors' code").
func TestCholeskyRankDeficientCovariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, s = 10, 64
	x := make([]float32, n*s)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	g, err := Estimate(x, n, s)
	if err != nil {
		t.Fatal(err)
	}
	chol, fb, err := Cholesky(g.Cov)
	if err != nil {
		t.Fatal(err)
	}
	var rebuilt mat.SymDense
	chol.ToSym(&rebuilt)
	if !mat.EqualApprox(&rebuilt, g.Cov, 1e-5) {
		t.Errorf("factor of a rank-9 covariance (%v) strays from it", fb)
	}
}

func TestFallbackString(t *testing.T) {
	for i, c := range []struct {
		f    Fallback
		want string
	}{{Direct, "direct"}, {Jittered, "jittered"}, {EigenFloored, "eigen-floored"}, {Fallback(7), "Fallback(7)"}} {
		if got := c.f.String(); got != c.want {
			t.Errorf("case %d: %q, want %q", i, got, c.want)
		}
	}
}
