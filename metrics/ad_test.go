package metrics

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestADHandComputed uses four 2-dim old features, the corners (+-1, +-1),
// so that Z_old Z_old^T = 4 I, and w = z0*z1 = (1, -1, -1, 1), which is
// orthogonal to both coordinates and to 1.
//
// Case 0, z_new = (z0, w): Z_new Z_old^T = [[4, 0], [0, 0]], Z_new Z_new^T = 4 I,
// A_hat = diag(1, 0), D_hat = diag(1, 0), A_hat D_hat = diag(1, 0): singular
// values 1 and 0, AD-% = 50.
//
// Case 1, z_new = (z0, 0.5 z1): A_hat = diag(1, 0.5), D_hat = diag(1, 2),
// product I: AD-% = 100 (a scaling is undone by the other direction).
//
// Case 2, z_new = (z0, 0.5 z1 + 0.5 w): Z_new Z_old^T = diag(4, 2),
// Z_new Z_new^T = diag(4, 4*(0.25 + 0.25)) = diag(4, 2), so A_hat = diag(1, 0.5)
// and D_hat = diag(4, 2) diag(1/4, 1/2) = I: singular values 1 and 0.5,
// AD-% = 50.
//
// Case 3, one row (1, 0) -> (2, 0): the Gram matrices are singular and the
// pseudo-inverse keeps only the first axis: A_hat = diag(2, 0),
// D_hat = diag(2, 0) diag(1/4, 0) = diag(0.5, 0): singular values 1 and 0.
func TestADHandComputed(t *testing.T) {
	corners := []float32{1, 1, 1, -1, -1, 1, -1, -1}
	w := []float32{1, -1, -1, 1}
	newFeatures := func(f func(z0, z1, w float32) (float32, float32)) []float32 {
		out := make([]float32, 8)
		for i := range 4 {
			out[2*i], out[2*i+1] = f(corners[2*i], corners[2*i+1], w[i])
		}
		return out
	}
	cases := []struct {
		old, cur []float32
		n        int
		wantSV   []float64
		wantPct  float64
	}{
		{corners, newFeatures(func(z0, _, w float32) (float32, float32) { return z0, w }), 4, []float64{1, 0}, 50},
		{corners, newFeatures(func(z0, z1, _ float32) (float32, float32) { return z0, 0.5 * z1 }), 4, []float64{1, 1}, 100},
		{corners, newFeatures(func(z0, z1, w float32) (float32, float32) { return z0, 0.5*z1 + 0.5*w }), 4, []float64{1, 0.5}, 50},
		{[]float32{1, 0}, []float32{2, 0}, 1, []float64{1, 0}, 50},
	}
	for i, c := range cases {
		got, err := AD(c.old, c.cur, c.n, 2)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if got.Percent != c.wantPct {
			t.Errorf("case %d: AD-%% = %v, want %v", i, got.Percent, c.wantPct)
		}
		for k, v := range c.wantSV {
			if math.Abs(got.SingularValues[k]-v) > 1e-12 {
				t.Errorf("case %d: singular values %v, want %v", i, got.SingularValues, c.wantSV)
				break
			}
		}
	}
}

// TestADInvertibleMap: z_new = M z_old for an invertible M gives
// A_hat = M, D_hat = M^-1 and AD-% = 100, whatever M's own spectrum.
func TestADInvertibleMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, s = 200, 8
	m := mat.NewDense(s, s, nil)
	for i := range s {
		for j := range s {
			m.Set(i, j, rng.NormFloat64())
		}
		m.Set(i, i, m.At(i, i)+3)
	}
	old := make([]float32, n*s)
	cur := make([]float32, n*s)
	for r := range n {
		for j := range s {
			old[r*s+j] = float32(rng.NormFloat64())
		}
		for i := range s {
			var v float64
			for j := range s {
				v += m.At(i, j) * float64(old[r*s+j])
			}
			cur[r*s+i] = float32(v)
		}
	}
	got, err := AD(old, cur, n, s)
	if err != nil {
		t.Fatal(err)
	}
	if got.Percent != 100 {
		t.Errorf("AD-%% = %v, singular values %v, want 100", got.Percent, got.SingularValues)
	}
	a, _, err := ADSurrogates(old, cur, n, s)
	if err != nil {
		t.Fatal(err)
	}
	if !mat.EqualApprox(a, m, 1e-4) {
		t.Errorf("A_hat = %v, want M = %v", mat.Formatted(a), mat.Formatted(m))
	}
}

// TestADOfMaps: A = diag(1, 0.5, 2, 1.05), D = I: singular values 2, 1.05,
// 1, 0.5, of which 1.05 and 1 lie in [0.9, 1.1]: 50%. The band is closed:
// diag(0.9, 1.1) gives 100%.
func TestADOfMaps(t *testing.T) {
	eye := mat.NewDiagDense(4, []float64{1, 1, 1, 1})
	cases := []struct {
		a, d    mat.Matrix
		wantPct float64
	}{
		{mat.NewDiagDense(4, []float64{1, 0.5, 2, 1.05}), eye, 50},
		{mat.NewDiagDense(2, []float64{0.9, 1.1}), mat.NewDiagDense(2, []float64{1, 1}), 100},
		{mat.NewDiagDense(2, []float64{0.89, 1.11}), mat.NewDiagDense(2, []float64{1, 1}), 0},
	}
	for i, c := range cases {
		got, err := ADOfMaps(c.a, c.d)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if got.Percent != c.wantPct {
			t.Errorf("case %d: AD-%% = %v (singular values %v), want %v", i, got.Percent, got.SingularValues, c.wantPct)
		}
	}
}

func TestADErrors(t *testing.T) {
	nan := float32(math.NaN())
	cases := []struct {
		old, cur []float32
		n, s     int
		want     string
	}{
		{[]float32{1, 2}, []float32{1}, 1, 2, "metrics: ad: new features have 1 values, want 1 rows x 2: invalid AD-% input"},
		{[]float32{1, nan}, []float32{1, 2}, 1, 2, "metrics: ad: old features: row 0, column 1 is NaN: invalid AD-% input"},
		{nil, nil, 0, 2, "metrics: ad: 0 rows of dimension 2: invalid AD-% input"},
	}
	for i, c := range cases {
		_, err := AD(c.old, c.cur, c.n, c.s)
		if err == nil || err.Error() != c.want || !errors.Is(err, ErrInvalidAD) {
			t.Errorf("case %d: err = %v, want %q", i, err, c.want)
		}
	}
	if _, err := ADOfMaps(mat.NewDense(2, 3, nil), mat.NewDense(3, 2, nil)); !errors.Is(err, ErrInvalidAD) {
		t.Errorf("non-square maps: err = %v", err)
	}
}
