package train

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/models"
)

// TestTransportLinearClosedForm pushes a Gaussian through a linear adapter
// with the engine's own batched gorgonia map and compares the Monte Carlo
// estimate with the closed form (A mu, A Sigma A^T).
func TestTransportLinearClosedForm(t *testing.T) {
	const s, n = 6, 200000
	rng := rand.New(rand.NewPCG(7, 8))
	a, err := models.NewMapper("linear", s, 1, rng)
	if err != nil {
		t.Fatal(err)
	}
	w := mat.NewDense(s, s, nil) // the adapter computes y = x W^T
	for i, v := range a.Params()[0].Data().([]float32) {
		w.Set(i/s, i%s, float64(v))
	}
	mean := make([]float64, s)
	l := mat.NewDense(s, s, nil)
	for i := 0; i < s; i++ {
		mean[i] = rng.NormFloat64()
		for j := 0; j <= i; j++ {
			l.Set(i, j, 0.5*rng.NormFloat64())
		}
		l.Set(i, i, 1+rng.Float64())
	}
	var cov mat.SymDense
	cov.SymOuterK(1, l)
	g := gauss.Gaussian{Mean: mean, Cov: &cov}

	f, done, err := mapperFunc(a, s, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	got, err := gauss.Transport(g, f, n, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}

	wantMean := mat.NewVecDense(s, nil)
	wantMean.MulVec(w, mat.NewVecDense(s, mean))
	var wantCov mat.Dense
	wantCov.Product(w, &cov, w.T())
	// Monte Carlo standard errors: sqrt(C_ii/n) for the mean, and
	// sqrt((C_ii C_jj + C_ij^2)/(n-1)) for the covariance; allow 5 of them
	// plus float32 rounding of the adapter's arithmetic.
	for i := 0; i < s; i++ {
		se := math.Sqrt(wantCov.At(i, i) / n)
		if d := math.Abs(got.Mean[i] - wantMean.AtVec(i)); d > 5*se+1e-4 {
			t.Errorf("mean[%d] = %g, want %g (|diff| %g > 5 se %g)", i, got.Mean[i], wantMean.AtVec(i), d, 5*se)
		}
		for j := 0; j < s; j++ {
			cij := wantCov.At(i, j)
			se := math.Sqrt((wantCov.At(i, i)*wantCov.At(j, j) + cij*cij) / (n - 1))
			if d := math.Abs(got.Cov.At(i, j) - cij); d > 5*se+1e-4 {
				t.Errorf("cov[%d,%d] = %g, want %g (|diff| %g > 5 se %g)", i, j, got.Cov.At(i, j), cij, d, 5*se)
			}
		}
	}
}

func TestLearningRateSchedule(t *testing.T) {
	ms := []float64{0.3, 0.6, 0.9}
	cases := []struct {
		epoch, epochs int
		want          float64
	}{
		{0, 10, 0.1}, {2, 10, 0.1}, {3, 10, 0.01}, {5, 10, 0.01}, {6, 10, 0.001}, {9, 10, 0.0001},
		{0, 1, 0.1}, // one epoch: no milestone is reached
		{0, 3, 0.1}, {1, 3, 0.01}, {2, 3, 0.001},
	}
	for i, c := range cases {
		if got := LearningRate(0.1, 0.1, ms, c.epoch, c.epochs); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("case %d: epoch %d of %d: lr %g, want %g", i, c.epoch, c.epochs, got, c.want)
		}
	}
}
