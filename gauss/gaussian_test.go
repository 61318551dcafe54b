package gauss

import (
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestEstimateHandComputed checks Estimate on three 2-dim rows:
//
//	x = (1, 2), (3, 2), (5, 8)
//	mu = (9/3, 12/3) = (3, 4)
//	centred: (-2, -2), (0, -2), (2, 4)
//	sum of outer products: xx = 4+0+4 = 8, xy = 4+0+8 = 12, yy = 4+4+16 = 24
//	unbiased (divide by n-1 = 2): [[4, 6], [6, 12]], plus 1e-8 on the diagonal.
func TestEstimateHandComputed(t *testing.T) {
	g, err := Estimate([]float32{1, 2, 3, 2, 5, 8}, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	wantMean := []float64{3, 4}
	wantCov := [][]float64{{4 + Ridge, 6}, {6, 12 + Ridge}}
	for i := range 2 {
		if g.Mean[i] != wantMean[i] {
			t.Errorf("mean[%d] = %v, want %v", i, g.Mean[i], wantMean[i])
		}
		for j := range 2 {
			if got := g.Cov.At(i, j); math.Abs(got-wantCov[i][j]) > 1e-15 {
				t.Errorf("cov[%d][%d] = %.17g, want %.17g", i, j, got, wantCov[i][j])
			}
		}
	}
	if g.Dim() != 2 {
		t.Errorf("Dim() = %d, want 2", g.Dim())
	}
}

func TestEstimateErrors(t *testing.T) {
	nan := float32(math.NaN())
	cases := []struct {
		x    []float32
		n, s int
		want error
	}{
		{[]float32{1, 2}, 1, 2, ErrTooFewSamples},
		{nil, 0, 3, ErrTooFewSamples},
		{[]float32{1, 2, 3}, 2, 2, ErrShape},
		{[]float32{1, 2, 3, nan}, 2, 2, ErrNonFinite},
		{[]float32{1, 2, float32(math.Inf(1)), 4}, 2, 2, ErrNonFinite},
	}
	for i, c := range cases {
		_, err := Estimate(c.x, c.n, c.s)
		if !errors.Is(err, c.want) {
			t.Errorf("case %d: err = %v, want %v", i, err, c.want)
		}
	}
	_, err := Estimate([]float32{1, 2, 3, nan}, 2, 2)
	if want := "gauss: row 1, column 1 is NaN: non-finite value"; err.Error() != want {
		t.Errorf("error text %q, want %q", err, want)
	}
}

// TestEstimateDiagonal checks the fallback:
//
//	one row (1, -2), prior 0.5: mean (1, -2), variances (0.5, 0.5)
//	rows (0, 0), (2, 4), prior 1: mean (1, 2); sum of squares (n-1)var = (2, 8);
//	v = ((2 + 1)/2, (8 + 1)/2) = (1.5, 4.5); off-diagonal 0.
func TestEstimateDiagonal(t *testing.T) {
	cases := []struct {
		x        []float32
		n        int
		prior    float64
		wantMean []float64
		wantVar  []float64
	}{
		{[]float32{1, -2}, 1, 0.5, []float64{1, -2}, []float64{0.5, 0.5}},
		{[]float32{0, 0, 2, 4}, 2, 1, []float64{1, 2}, []float64{1.5, 4.5}},
	}
	for i, c := range cases {
		g, err := EstimateDiagonal(c.x, c.n, 2, c.prior)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		for j := range 2 {
			if g.Mean[j] != c.wantMean[j] {
				t.Errorf("case %d: mean[%d] = %v, want %v", i, j, g.Mean[j], c.wantMean[j])
			}
			if got := g.Cov.At(j, j); math.Abs(got-c.wantVar[j]-Ridge) > 1e-15 {
				t.Errorf("case %d: var[%d] = %v, want %v", i, j, got, c.wantVar[j]+Ridge)
			}
		}
		if g.Cov.At(0, 1) != 0 {
			t.Errorf("case %d: off-diagonal %v, want 0", i, g.Cov.At(0, 1))
		}
	}
	if _, err := EstimateDiagonal(nil, 0, 2, 1); !errors.Is(err, ErrTooFewSamples) {
		t.Errorf("no rows: err = %v, want ErrTooFewSamples", err)
	}
}

// TestMeanVariance: mean diagonals (2+2)/2 = 2 and (4+6)/2 = 5, average 3.5.
func TestMeanVariance(t *testing.T) {
	a := Gaussian{Mean: []float64{0, 0}, Cov: mat.NewSymDense(2, []float64{2, 0, 0, 2})}
	b := Gaussian{Mean: []float64{0, 0}, Cov: mat.NewSymDense(2, []float64{4, 1, 1, 6})}
	if got := MeanVariance([]Gaussian{a, b}); got != 3.5 {
		t.Errorf("MeanVariance = %v, want 3.5", got)
	}
	if got := MeanVariance(nil); !math.IsNaN(got) {
		t.Errorf("MeanVariance(nil) = %v, want NaN", got)
	}
}

// TestShrink: Sigma = [[2, 1], [1, 4]], mean diagonal 3, gamma 3 adds
// 9 + 1e-8 to the diagonal: [[11 + 1e-8, 1], [1, 13 + 1e-8]]; the input is
// unchanged.
func TestShrink(t *testing.T) {
	cov := mat.NewSymDense(2, []float64{2, 1, 1, 4})
	got := Shrink(cov, 3)
	want := mat.NewSymDense(2, []float64{11 + Ridge, 1, 1, 13 + Ridge})
	if !mat.EqualApprox(got, want, 1e-14) {
		t.Errorf("Shrink = %v, want %v", mat.Formatted(got), mat.Formatted(want))
	}
	if cov.At(0, 0) != 2 {
		t.Errorf("Shrink modified its input")
	}
}

func TestSymmetrize(t *testing.T) {
	got := Symmetrize(mat.NewDense(2, 2, []float64{1, 2, 4, 3}))
	want := mat.NewSymDense(2, []float64{1, 3, 3, 3})
	if !mat.Equal(got, want) {
		t.Errorf("Symmetrize = %v, want %v", mat.Formatted(got), mat.Formatted(want))
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		g    Gaussian
		want error
	}{
		{Gaussian{}, ErrShape},
		{Gaussian{Mean: []float64{1}}, ErrShape},
		{Gaussian{Mean: []float64{1}, Cov: mat.NewSymDense(2, nil)}, ErrShape},
		{Gaussian{Mean: []float64{math.NaN()}, Cov: mat.NewSymDense(1, []float64{1})}, ErrNonFinite},
		{Gaussian{Mean: []float64{0, 0}, Cov: mat.NewSymDense(2, []float64{1, math.Inf(-1), math.Inf(-1), 1})}, ErrNonFinite},
		{Gaussian{Mean: []float64{0}, Cov: mat.NewSymDense(1, []float64{1})}, nil},
	}
	for i, c := range cases {
		if err := c.g.Validate(); !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
			t.Errorf("case %d: err = %v, want %v", i, err, c.want)
		}
	}
}
