package gauss

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// randomAffinePairs returns n rows x ~ N(0, I) and y = W^T x + b for a
// random W [s,s] and b.
func randomAffinePairs(rng *rand.Rand, n, s int) (x, y []float32, w *mat.Dense, b []float64) {
	w = mat.NewDense(s, s, nil)
	b = make([]float64, s)
	for i := 0; i < s; i++ {
		b[i] = rng.NormFloat64()
		for j := 0; j < s; j++ {
			w.Set(i, j, rng.NormFloat64()/math.Sqrt(float64(s)))
		}
	}
	x, y = make([]float32, n*s), make([]float32, n*s)
	for r := 0; r < n; r++ {
		for i := 0; i < s; i++ {
			x[r*s+i] = float32(rng.NormFloat64())
		}
		for j := 0; j < s; j++ {
			v := b[j]
			for i := 0; i < s; i++ {
				v += float64(x[r*s+i]) * w.At(i, j)
			}
			y[r*s+j] = float32(v)
		}
	}
	return x, y, w, b
}

func TestFitAffineRecoversAMap(t *testing.T) {
	const n, s = 2000, 6
	rng := rand.New(rand.NewPCG(1, 2))
	x, y, w, b := randomAffinePairs(rng, n, s)
	a, err := FitAffine(x, y, n, s, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < s; i++ {
		if d := math.Abs(a.B[i] - b[i]); d > 1e-3 {
			t.Errorf("b[%d] = %v, want %v", i, a.B[i], b[i])
		}
		for j := 0; j < s; j++ {
			if d := math.Abs(a.W.At(i, j) - w.At(i, j)); d > 1e-3 {
				t.Errorf("W[%d,%d] = %v, want %v", i, j, a.W.At(i, j), w.At(i, j))
			}
		}
	}
	out, err := a.Map(x, n)
	if err != nil {
		t.Fatal(err)
	}
	if mse := MeanSquaredError(out, y); mse > 1e-6 {
		t.Errorf("fitted map's MSE %g on its own exact pairs", mse)
	}
}

// TestFitAffineKeepsUnseenDirections fits on rows that vary in the first
// two coordinates only: the ridge toward the identity must leave the other
// directions as they are, the property that makes the fit safe on a few
// dozen pairs.
func TestFitAffineKeepsUnseenDirections(t *testing.T) {
	const n, s = 40, 8
	rng := rand.New(rand.NewPCG(3, 4))
	x, y := make([]float32, n*s), make([]float32, n*s)
	for r := 0; r < n; r++ {
		x[r*s], x[r*s+1] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		y[r*s], y[r*s+1] = 2*x[r*s]+1, -x[r*s+1]
	}
	a, err := FitAffine(x, y, n, s, 1e-2)
	if err != nil {
		t.Fatal(err)
	}
	probe := make([]float32, s)
	probe[5] = 3
	out, err := a.Map(probe, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(float64(out[5]) - 3); d > 1e-6 {
		t.Errorf("unseen direction 5 maps to %v, want 3 (identity)", out[5])
	}
	if d := math.Abs(float64(out[0]) - 1); d > 0.05 {
		t.Errorf("offset of direction 0: %v, want about 1", out[0])
	}
}

// TestAffineTransportIsExact compares the closed-form transport with the
// Monte Carlo transport of the same map.
func TestAffineTransportIsExact(t *testing.T) {
	const n, s = 500, 4
	rng := rand.New(rand.NewPCG(5, 6))
	x, y, _, _ := randomAffinePairs(rng, n, s)
	a, err := FitAffine(x, y, n, s, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Estimate(y, n, s)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := a.Transport(g)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := Transport(g, a.Map, 200000, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatal(err)
	}
	scale := math.Sqrt(meanDiagonal(exact.Cov))
	for i := 0; i < s; i++ {
		if d := math.Abs(exact.Mean[i] - mc.Mean[i]); d > 0.02*scale {
			t.Errorf("mean[%d]: exact %v, Monte Carlo %v", i, exact.Mean[i], mc.Mean[i])
		}
		for j := 0; j < s; j++ {
			if d := math.Abs(exact.Cov.At(i, j) - mc.Cov.At(i, j)); d > 0.03*scale*scale {
				t.Errorf("cov[%d,%d]: exact %v, Monte Carlo %v", i, j, exact.Cov.At(i, j), mc.Cov.At(i, j))
			}
		}
	}
}

func TestFitAffineErrors(t *testing.T) {
	x := []float32{1, 2, 3, 4}
	nan := []float32{1, float32(math.NaN()), 3, 4}
	for i, c := range []struct {
		x, y  []float32
		n, s  int
		ridge float64
		want  error
	}{
		{x, x, 1, 2, 1e-2, ErrShape},
		{x, x[:2], 2, 2, 1e-2, ErrShape},
		{x, nan, 2, 2, 1e-2, ErrNonFinite},
		{x, x, 2, 2, 0, nil},
	} {
		_, err := FitAffine(c.x, c.y, c.n, c.s, c.ridge)
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("case %d: error %v, want %v", i, err, c.want)
		}
	}
}
