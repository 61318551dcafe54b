package gauss

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// naiveScores evaluates the classifier's score with an explicit inverse,
// written from docs/method.md ("Classifier") independently of classifier.go:
//
//	Sigma' = Sigma + shrink*tr(Sigma)/S*I + 1e-8 I, then its correlation
//	matrix if normalize; z and mu L2-normalised if normalize;
//	s_c = (z - mu)^T Sigma'^-1 (z - mu) [+ log det Sigma' - 2 log(p_c/sum p)]
func naiveScores(t *testing.T, protos []Gaussian, priors []float64, opts ClassifierOptions, z []float64) []float64 {
	t.Helper()
	s := len(z)
	unit := func(v []float64) []float64 {
		out := slices.Clone(v)
		if opts.Normalize {
			norm := math.Sqrt(mat.Dot(mat.NewVecDense(s, v), mat.NewVecDense(s, v)))
			for i := range out {
				out[i] /= max(norm, 1e-12)
			}
		}
		return out
	}
	zh := unit(z)
	out := make([]float64, len(protos))
	for c, p := range protos {
		shrunk := mat.NewDense(s, s, nil)
		var tr float64
		for i := range s {
			tr += p.Cov.At(i, i)
		}
		for i := range s {
			for j := range s {
				shrunk.Set(i, j, p.Cov.At(i, j))
			}
			shrunk.Set(i, i, shrunk.At(i, i)+opts.Shrink*tr/float64(s)+1e-8)
		}
		if opts.Normalize {
			corr := mat.NewDense(s, s, nil)
			for i := range s {
				for j := range s {
					corr.Set(i, j, shrunk.At(i, j)/math.Sqrt(shrunk.At(i, i)*shrunk.At(j, j)))
				}
			}
			shrunk = corr
		}
		var inv mat.Dense
		if err := inv.Inverse(shrunk); err != nil {
			t.Fatalf("class %d: %v", c, err)
		}
		m := unit(p.Mean)
		d := mat.NewVecDense(s, nil)
		d.SubVec(mat.NewVecDense(s, zh), mat.NewVecDense(s, m))
		out[c] = mat.Inner(d, &inv, d)
		if opts.FullGaussian {
			logDet, sign := mat.LogDet(shrunk)
			if sign <= 0 {
				t.Fatalf("class %d: determinant sign %v", c, sign)
			}
			prior := 1 / float64(len(protos))
			if priors != nil {
				prior = priors[c] / floats64Sum(priors)
			}
			out[c] += logDet - 2*math.Log(prior)
		}
	}
	return out
}

func floats64Sum(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s
}

func TestScoresMatchExplicitInverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const k, s, n = 4, 6, 150
	protos := make([]Gaussian, k)
	for c := range protos {
		protos[c] = randomGaussian(rng, s)
	}
	// Class 3 has a rank-3 covariance (4 samples in 6 dims), as a class with
	// few images would.
	few := make([]float32, 4*s)
	for i := range few {
		few[i] = float32(rng.NormFloat64())
	}
	var err error
	if protos[3], err = Estimate(few, 4, s); err != nil {
		t.Fatal(err)
	}
	z := make([]float32, n*s)
	for i := range z {
		z[i] = float32(2 * rng.NormFloat64())
	}
	cases := []struct {
		opts   ClassifierOptions
		priors []float64
	}{
		{DefaultClassifierOptions(), nil},
		{ClassifierOptions{Shrink: 3}, nil},
		{ClassifierOptions{Shrink: 0.5, Normalize: true, FullGaussian: true}, nil},
		{ClassifierOptions{Shrink: 1, FullGaussian: true}, []float64{10, 20, 5, 65}},
		{ClassifierOptions{Shrink: 3, Normalize: true, FullGaussian: true}, []float64{1, 1, 1, 3}},
	}
	for i, tc := range cases {
		cl, err := NewClassifier(protos, tc.priors, tc.opts)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		got := cl.Scores(z, n)
		var worst float64
		for r := range n {
			row := make([]float64, s)
			for j := range s {
				row[j] = float64(z[r*s+j])
			}
			want := naiveScores(t, protos, tc.priors, tc.opts, row)
			for c := range k {
				rel := math.Abs(float64(got[r*k+c])-want[c]) / max(1, math.Abs(want[c]))
				worst = max(worst, rel)
			}
		}
		if worst > 1e-6 {
			t.Errorf("case %d (%+v): worst relative score error %.2e, want <= 1e-6", i, tc.opts, worst)
		}
	}
}

// TestTablesReproduceScores evaluates the export contract
// score_c = ||W_c (zh - m_c)||^2 + b_c from Tables() alone, and checks that
// W_c is lower triangular and whitens Sigma'_c: W_c Sigma'_c W_c^T = I.
func TestTablesReproduceScores(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	const k, s, n = 3, 5, 40
	protos := make([]Gaussian, k)
	for c := range protos {
		protos[c] = randomGaussian(rng, s)
	}
	z := make([]float32, n*s)
	for i := range z {
		z[i] = float32(rng.NormFloat64())
	}
	for i, opts := range []ClassifierOptions{
		DefaultClassifierOptions(),
		{Shrink: 2, FullGaussian: true},
	} {
		cl, err := NewClassifier(protos, nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		tb := cl.Tables()
		if tb.K != k || tb.S != s || tb.Normalize != opts.Normalize ||
			len(tb.Means) != k*s || len(tb.Whiten) != k*s*s || len(tb.Bias) != k {
			t.Fatalf("case %d: tables K=%d S=%d normalize=%t lengths %d %d %d", i, tb.K, tb.S, tb.Normalize, len(tb.Means), len(tb.Whiten), len(tb.Bias))
		}
		got := cl.Scores(z, n)
		for r := range n {
			zh := make([]float64, s)
			for j := range s {
				zh[j] = float64(z[r*s+j])
			}
			if tb.Normalize {
				normalizeL2(zh)
			}
			for c := range k {
				var score float64
				for a := range s {
					var y float64
					for b := range s {
						y += float64(tb.Whiten[(c*s+a)*s+b]) * (zh[b] - float64(tb.Means[c*s+b]))
					}
					score += y * y
				}
				score += float64(tb.Bias[c])
				if rel := math.Abs(score-float64(got[r*k+c])) / max(1, score); rel > 1e-5 {
					t.Errorf("case %d: row %d class %d: tables give %v, Scores %v", i, r, c, score, got[r*k+c])
				}
			}
		}
		for c := range k {
			w := mat.NewDense(s, s, nil)
			for a := range s {
				for b := range s {
					w.Set(a, b, float64(tb.Whiten[(c*s+a)*s+b]))
					if b > a && tb.Whiten[(c*s+a)*s+b] != 0 {
						t.Errorf("case %d: W_%d[%d][%d] = %v above the diagonal", i, c, a, b, tb.Whiten[(c*s+a)*s+b])
					}
				}
			}
			shrunk := Shrink(protos[c].Cov, opts.Shrink)
			if opts.Normalize {
				if err := toCorrelation(shrunk); err != nil {
					t.Fatal(err)
				}
			}
			var ws, wswt mat.Dense
			ws.Mul(w, shrunk)
			wswt.Mul(&ws, w.T())
			if !mat.EqualApprox(&wswt, eye(s), 1e-5) {
				t.Errorf("case %d: W_%d Sigma' W_%d^T = %v, want I", i, c, c, mat.Formatted(&wswt))
			}
		}
	}
}

func eye(s int) *mat.Dense {
	m := mat.NewDense(s, s, nil)
	for i := range s {
		m.Set(i, i, 1)
	}
	return m
}

// TestPredictToy: two classes with identity covariance at (-2, 0) and (2, 0)
// (after normalisation, (-1, 0) and (1, 0)); points on either side of the
// y axis go to the class on their side, under every option set.
func TestPredictToy(t *testing.T) {
	protos := []Gaussian{
		diagGaussian([]float64{-2, 0}, 1, 1),
		diagGaussian([]float64{2, 0}, 1, 1),
	}
	z := []float32{-1.5, 0.3, 1.8, -0.2, -0.1, -3, 4, 4}
	want := []int{0, 1, 0, 1}
	for i, opts := range []ClassifierOptions{
		DefaultClassifierOptions(),
		{Shrink: 0},
		{Shrink: 1, FullGaussian: true},
	} {
		cl, err := NewClassifier(protos, nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := cl.Predict(z, 4, nil); !slices.Equal(got, want) {
			t.Errorf("case %d: Predict = %v, want %v", i, got, want)
		}
		// Task-aware: only class 1 allowed.
		if got := cl.Predict(z, 4, []int{1}); !slices.Equal(got, []int{1, 1, 1, 1}) {
			t.Errorf("case %d: Predict allowed {1} = %v, want all 1", i, got)
		}
	}
}

// TestPredictTies: two identical prototypes give every point equal scores;
// the lower class index wins even when allowed lists it last.
func TestPredictTies(t *testing.T) {
	p := diagGaussian([]float64{1, 1}, 2, 3)
	cl, err := NewClassifier([]Gaussian{diagGaussian([]float64{-5, 0}, 1, 1), p, p}, nil, DefaultClassifierOptions())
	if err != nil {
		t.Fatal(err)
	}
	z := []float32{1, 1, 2, 0.5}
	for i, allowed := range [][]int{nil, {2, 1}, {1, 2}} {
		if got := cl.Predict(z, 2, allowed); !slices.Equal(got, []int{1, 1}) {
			t.Errorf("case %d: allowed %v: Predict = %v, want [1 1]", i, allowed, got)
		}
	}
}

// TestPredictScores: predicting from scores equals Predict, and the mean
// of an image's and its mirror's scores (MeanScores) predicts the class
// nearer on average: a point nearer class 0 and a mirror nearer class 1 by
// more go to class 1.
func TestPredictScores(t *testing.T) {
	protos := []Gaussian{diagGaussian([]float64{-2, 0}, 1, 1), diagGaussian([]float64{2, 0}, 1, 1)}
	cl, err := NewClassifier(protos, nil, ClassifierOptions{Shrink: 0})
	if err != nil {
		t.Fatal(err)
	}
	z := []float32{-0.5, 0, 1.5, 0}
	scores := cl.Scores(z, 2)
	if got, want := cl.PredictScores(scores, 2, nil), cl.Predict(z, 2, nil); !slices.Equal(got, want) || !slices.Equal(got, []int{0, 1}) {
		t.Errorf("PredictScores %v, Predict %v, want [0 1] both", got, want)
	}
	mean := MeanScores(scores[:2], scores[2:])
	if got := cl.PredictScores(mean, 1, nil); !slices.Equal(got, []int{1}) {
		t.Errorf("mean of the two rows' scores %v predicts %v, want [1]", mean, got)
	}
	if got := MeanScores([]float32{1, 3}, []float32{3, 5}); !slices.Equal(got, []float32{2, 4}) {
		t.Errorf("MeanScores = %v, want [2 4]", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("PredictScores with too few scores did not panic")
		}
	}()
	cl.PredictScores(scores[:3], 2, nil)
}

func TestPredictNaN(t *testing.T) {
	cl, err := NewClassifier([]Gaussian{diagGaussian([]float64{0, 1}, 1, 1)}, nil, DefaultClassifierOptions())
	if err != nil {
		t.Fatal(err)
	}
	got := cl.Predict([]float32{float32(math.NaN()), 0, 0, 1}, 2, nil)
	if !slices.Equal(got, []int{NoClass, 0}) {
		t.Errorf("Predict = %v, want [%d 0]", got, NoClass)
	}
}

func TestNewClassifierErrors(t *testing.T) {
	good := diagGaussian([]float64{0, 1}, 1, 1)
	cases := []struct {
		protos []Gaussian
		priors []float64
		opts   ClassifierOptions
		want   string
	}{
		{nil, nil, DefaultClassifierOptions(), "gauss: classifier: no prototypes"},
		{[]Gaussian{good}, nil, ClassifierOptions{Shrink: -1}, "gauss: classifier: shrink -1, want a finite value >= 0"},
		{[]Gaussian{good, diagGaussian([]float64{0}, 1)}, nil, DefaultClassifierOptions(),
			"gauss: classifier: class 1 has dimension 1, class 0 has 2: shape mismatch"},
		{[]Gaussian{good, diagGaussian([]float64{0, math.NaN()}, 1, 1)}, nil, DefaultClassifierOptions(),
			"gauss: classifier: class 1: gauss: mean[1] = NaN: non-finite value"},
		{[]Gaussian{good, good}, []float64{1}, ClassifierOptions{FullGaussian: true},
			"gauss: classifier: 1 priors for 2 classes: shape mismatch"},
		{[]Gaussian{good, good}, []float64{1, 0}, ClassifierOptions{FullGaussian: true},
			"gauss: classifier: prior of class 1 is 0, want a positive finite number"},
		{[]Gaussian{diagGaussian([]float64{0, 1}, -1, 1)}, nil, ClassifierOptions{Normalize: true},
			"gauss: classifier: class 0: shrunk covariance has diagonal entry [0] = -0.99999999: matrix is not positive definite"},
	}
	for i, c := range cases {
		_, err := NewClassifier(c.protos, c.priors, c.opts)
		if err == nil || err.Error() != c.want {
			t.Errorf("case %d: err = %v, want %q", i, err, c.want)
		}
	}
}

// TestClassifierFallbacks: an indefinite covariance (eigenvalues -1 and 3)
// without shrinkage must be repaired, and the repair reported.
func TestClassifierFallbacks(t *testing.T) {
	bad := Gaussian{Mean: []float64{0, 1}, Cov: mat.NewSymDense(2, []float64{1, 2, 2, 1})}
	cl, err := NewClassifier([]Gaussian{diagGaussian([]float64{1, 0}, 1, 1), bad}, nil, ClassifierOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cl.Fallbacks(); !slices.Equal(got, []Fallback{Direct, EigenFloored}) {
		t.Errorf("Fallbacks = %v, want [direct eigen-floored]", got)
	}
	if cl.Classes() != 2 || cl.Dim() != 2 {
		t.Errorf("Classes, Dim = %d, %d, want 2, 2", cl.Classes(), cl.Dim())
	}
}

func BenchmarkScores(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const k, s, n = 100, 64, 1000
	protos := make([]Gaussian, k)
	for c := range protos {
		protos[c] = randomGaussian(rng, s)
	}
	cl, err := NewClassifier(protos, nil, DefaultClassifierOptions())
	if err != nil {
		b.Fatal(err)
	}
	z := make([]float32, n*s)
	for i := range z {
		z[i] = float32(rng.NormFloat64())
	}
	b.ReportAllocs()
	for b.Loop() {
		cl.Scores(z, n)
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
}
