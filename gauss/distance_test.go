package gauss

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// randomGaussian returns a Gaussian in s dims with covariance B B^T / s + 0.1 I
// for a standard normal B, well conditioned and full.
func randomGaussian(rng *rand.Rand, s int) Gaussian {
	b := mat.NewDense(s, s, nil)
	for i := range s {
		for j := range s {
			b.Set(i, j, rng.NormFloat64())
		}
	}
	cov := mat.NewSymDense(s, nil)
	cov.SymOuterK(1/float64(s), b)
	addDiagonal(cov, 0.1)
	mean := make([]float64, s)
	for i := range mean {
		mean[i] = rng.NormFloat64()
	}
	return Gaussian{Mean: mean, Cov: cov}
}

func TestSquaredMahalanobisMatchesInverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 5 {
		g := randomGaussian(rng, 6)
		x := make([]float64, 6)
		for j := range x {
			x[j] = 2 * rng.NormFloat64()
		}
		got, err := g.SquaredMahalanobis(x)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		var inv mat.Dense
		if err := inv.Inverse(g.Cov); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		d := mat.NewVecDense(6, nil)
		d.SubVec(mat.NewVecDense(6, x), mat.NewVecDense(6, g.Mean))
		want := mat.Inner(d, &inv, d)
		if math.Abs(got-want) > 1e-10*want {
			t.Errorf("case %d: %v, want %v", i, got, want)
		}
	}
	g := randomGaussian(rng, 3)
	if _, err := g.SquaredMahalanobis([]float64{1, 2}); !errors.Is(err, ErrShape) {
		t.Errorf("short point: err = %v, want ErrShape", err)
	}
}

func diagGaussian(mean []float64, variances ...float64) Gaussian {
	cov := mat.NewSymDense(len(variances), nil)
	for i, v := range variances {
		cov.SetSym(i, i, v)
	}
	return Gaussian{Mean: mean, Cov: cov}
}

// TestKLHandComputed:
//
//	1-D, N(0, 1) || N(1, 2): 1/2 [1/2 + 1/2 - 1 + ln 2] = ln(2)/2
//	2-D, N0 = ((0,0), diag(1,4)), N1 = ((1,2), diag(2,2)):
//	  KL(N0||N1) = 1/2 [(1/2 + 4/2) + (1/2 + 4/2) - 2 + ln 4 - ln 4] = 1.5
//	  KL(N1||N0) = 1/2 [(2/1 + 2/4) + (1/1 + 4/4) - 2 + ln 4 - ln 4] = 1.25
//	  symmetric: 2.75
func TestKLHandComputed(t *testing.T) {
	cases := []struct {
		n0, n1      Gaussian
		want, wantS float64
	}{
		{diagGaussian([]float64{0}, 1), diagGaussian([]float64{1}, 2), math.Ln2 / 2, math.NaN()},
		{diagGaussian([]float64{0, 0}, 1, 4), diagGaussian([]float64{1, 2}, 2, 2), 1.5, 2.75},
		{diagGaussian([]float64{3, 3}, 5, 5), diagGaussian([]float64{3, 3}, 5, 5), 0, 0},
	}
	for i, c := range cases {
		got, err := KL(c.n0, c.n1)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if math.Abs(got-c.want) > 1e-14 {
			t.Errorf("case %d: KL = %v, want %v", i, got, c.want)
		}
		if math.IsNaN(c.wantS) {
			continue
		}
		sym, err := SymmetricKL(c.n0, c.n1)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if math.Abs(sym-c.wantS) > 1e-14 {
			t.Errorf("case %d: symmetric KL = %v, want %v", i, sym, c.wantS)
		}
	}
}

// TestKLMatchesExplicitInverse compares full-covariance KL with the
// textbook formula evaluated with an explicit inverse and determinants.
func TestKLMatchesExplicitInverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 5 {
		a, b := randomGaussian(rng, 8), randomGaussian(rng, 8)
		got, err := KL(a, b)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		var inv, prod mat.Dense
		if err := inv.Inverse(b.Cov); err != nil {
			t.Fatal(err)
		}
		prod.Mul(&inv, a.Cov)
		d := mat.NewVecDense(8, nil)
		d.SubVec(mat.NewVecDense(8, b.Mean), mat.NewVecDense(8, a.Mean))
		logDetA, _ := mat.LogDet(a.Cov)
		logDetB, _ := mat.LogDet(b.Cov)
		want := 0.5 * (mat.Trace(&prod) + mat.Inner(d, &inv, d) - 8 + logDetB - logDetA)
		if math.Abs(got-want) > 1e-10*want {
			t.Errorf("case %d: KL = %v, explicit %v", i, got, want)
		}
	}
}

// TestDriftHandComputed: means (0,0) and (3,4) are 5 apart; covariances
// diag(1,4) and [[2,1],[1,4]] differ by [[-1,-1],[-1,0]], Frobenius sqrt 3.
// With eps = 0 the symmetric KL equals SymmetricKL of the two; with eps = 1
// it equals SymmetricKL of diag(2,5) and [[3,1],[1,5]].
func TestDriftHandComputed(t *testing.T) {
	stored := diagGaussian([]float64{0, 0}, 1, 4)
	test := Gaussian{Mean: []float64{3, 4}, Cov: mat.NewSymDense(2, []float64{2, 1, 1, 4})}
	for i, eps := range []float64{0, 1} {
		d, err := Drift(stored, test, eps)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if d.MeanL2 != 5 {
			t.Errorf("case %d: mean L2 %v, want 5", i, d.MeanL2)
		}
		if math.Abs(d.CovFrobenius-math.Sqrt(3)) > 1e-15 {
			t.Errorf("case %d: cov Frobenius %v, want sqrt 3", i, d.CovFrobenius)
		}
		reg := func(g Gaussian) Gaussian {
			cov := mat.NewSymDense(2, nil)
			cov.CopySym(g.Cov)
			cov.SetSym(0, 0, cov.At(0, 0)+eps)
			cov.SetSym(1, 1, cov.At(1, 1)+eps)
			return Gaussian{Mean: g.Mean, Cov: cov}
		}
		want, err := SymmetricKL(reg(stored), reg(test))
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(d.SymmetricKL-want) > 1e-14 {
			t.Errorf("case %d: symmetric KL %v, want %v", i, d.SymmetricKL, want)
		}
	}
	if stored.Cov.At(0, 0) != 1 || test.Cov.At(0, 0) != 2 {
		t.Error("Drift modified its arguments")
	}
	if _, err := Drift(stored, diagGaussian([]float64{0}, 1), 0); !errors.Is(err, ErrShape) {
		t.Errorf("mismatched dims: err = %v, want ErrShape", err)
	}
}
