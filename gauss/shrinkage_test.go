package gauss

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// fashionPrototypes estimates one Gaussian per class from the pooled pixels
// of the first n Fashion-MNIST training images, and returns test features.
func fashionPrototypes(t *testing.T, n int) ([]Gaussian, []float32, int) {
	t.Helper()
	train, test := fashionSets(t)
	x, labels, _ := fashionFeatures(train)
	const s = 49
	protos := make([]Gaussian, 10)
	for c := range protos {
		var rows []float32
		for i, y := range labels[:n] {
			if y == c {
				rows = append(rows, x[i*s:(i+1)*s]...)
			}
		}
		g, err := Estimate(rows, len(rows)/s, s)
		if err != nil {
			t.Fatal(err)
		}
		protos[c] = g
	}
	z, _, _ := fashionFeatures(test)
	const m = 300
	return protos, z[:m*s], m
}

// TestShrinkSeparateFormula checks FeCAM's shrinkage entry by entry:
// Sigma + g1*V1 on the diagonal (+1e-8), g2*V2 off it, with V1 and V2 the
// means of the diagonal and off-diagonal entries; g2 = 0 is Shrink bit for
// bit.
func TestShrinkSeparateFormula(t *testing.T) {
	protos, _, _ := fashionPrototypes(t, 3000)
	cov := protos[3].Cov
	s := cov.SymmetricDim()
	var v1, v2 float64
	for i := range s {
		for j := range s {
			if i == j {
				v1 += cov.At(i, j) / float64(s)
			} else {
				v2 += cov.At(i, j) / float64(s*(s-1))
			}
		}
	}
	if !(v2 > 0) {
		t.Fatalf("mean off-diagonal covariance %v: the test needs a non-zero V2", v2)
	}
	for i, g := range [][2]float64{{3, 1}, {0, 2}, {1, 0.5}} {
		got := ShrinkSeparate(cov, g[0], g[1])
		for a := range s {
			for b := range s {
				want := cov.At(a, b) + g[1]*v2
				if a == b {
					want = cov.At(a, b) + g[0]*v1 + Ridge
				}
				if d := got.At(a, b) - want; math.Abs(d) > 1e-12*math.Abs(want)+1e-15 {
					t.Fatalf("case %d (g1 %v, g2 %v): entry [%d,%d] = %v, want %v", i, g[0], g[1], a, b, got.At(a, b), want)
				}
			}
		}
	}
	if !mat.Equal(ShrinkSeparate(cov, 3, 0), Shrink(cov, 3)) {
		t.Error("ShrinkSeparate with g2 = 0 differs from Shrink")
	}
}

// TestClassifierCalibrationOptions checks on pooled Fashion-MNIST pixels
// that each calibration option changes the classifier as documented and
// nothing else: off (zeros, with or without ages) gives the published
// tables bit for bit; OffDiagShrink gives the Mahalanobis distance under
// ShrinkSeparate's covariance; AgeShrink gives class c the tables of a
// plain classifier with Shrink + AgeShrink*age_c; AgeBias adds
// AgeBias*age_c to the bias alone; PoolCov blends each covariance with the
// mean one.
func TestClassifierCalibrationOptions(t *testing.T) {
	protos, z, n := fashionPrototypes(t, 3000)
	ages := []int{4, 4, 3, 3, 2, 2, 1, 1, 0, 0}
	for _, normalize := range []bool{false, true} {
		base := ClassifierOptions{Shrink: 1, Normalize: normalize}
		off := build(t, protos, base)
		withAges := base
		withAges.Ages = ages
		if !tablesEqual(off.Tables(), build(t, protos, withAges).Tables()) {
			t.Errorf("normalize %v: ages with every option at 0 changed the tables", normalize)
		}

		ageShrink := withAges
		ageShrink.AgeShrink = 0.5
		got := build(t, protos, ageShrink).Tables()
		for c, a := range ages {
			plain := base
			plain.Shrink = base.Shrink + 0.5*float64(a)
			want := build(t, protos, plain).Tables()
			if !slices.Equal(block(got.Whiten, c, 49*49), block(want.Whiten, c, 49*49)) || !slices.Equal(got.Bias, off.Tables().Bias) {
				t.Errorf("normalize %v: class %d (age %d) is not the classifier with shrink %v", normalize, c, a, plain.Shrink)
			}
		}

		ageBias := withAges
		ageBias.AgeBias = -0.25
		biased := build(t, protos, ageBias).Tables()
		offT := off.Tables()
		if !slices.Equal(biased.Whiten, offT.Whiten) || !slices.Equal(biased.Means, offT.Means) {
			t.Errorf("normalize %v: age bias changed the whitening or the means", normalize)
		}
		for c, a := range ages {
			if want := float32(-0.25 * float64(a)); biased.Bias[c] != want {
				t.Errorf("normalize %v: class %d (age %d): bias %v, want %v", normalize, c, a, biased.Bias[c], want)
			}
		}
	}
	checkOffDiagonalDistance(t, protos, z, n)
	checkPooledCovariance(t, protos)
}

// checkPooledCovariance checks that PoolCov gives class c the tables of a
// plain classifier whose class c has covariance (1-l)*Sigma_c + l*mean
// Sigma, built entry by entry here, and leaves the means alone.
func checkPooledCovariance(t *testing.T, protos []Gaussian) {
	t.Helper()
	const lambda = 0.25
	s := protos[0].Dim()
	blended := make([]Gaussian, len(protos))
	for c, p := range protos {
		cov := mat.NewSymDense(s, nil)
		for i := range s {
			for j := i; j < s; j++ {
				var mean float64
				for _, q := range protos {
					mean += q.Cov.At(i, j)
				}
				mean /= float64(len(protos))
				cov.SetSym(i, j, (1-lambda)*p.Cov.At(i, j)+lambda*mean)
			}
		}
		blended[c] = Gaussian{Mean: p.Mean, Cov: cov}
	}
	for _, normalize := range []bool{false, true} {
		got := build(t, protos, ClassifierOptions{Shrink: 1, Normalize: normalize, PoolCov: lambda}).Tables()
		want := build(t, blended, ClassifierOptions{Shrink: 1, Normalize: normalize}).Tables()
		off := build(t, protos, ClassifierOptions{Shrink: 1, Normalize: normalize}).Tables()
		if !slices.Equal(got.Means, off.Means) || slices.Equal(got.Whiten, off.Whiten) {
			t.Errorf("normalize %v: pooling changed the means or left the whitening as it was", normalize)
		}
		for i := range got.Whiten {
			if d := math.Abs(float64(got.Whiten[i] - want.Whiten[i])); d > 1e-4*(1+math.Abs(float64(want.Whiten[i]))) {
				t.Fatalf("normalize %v: whitening entry %d = %v, want %v", normalize, i, got.Whiten[i], want.Whiten[i])
			}
		}
	}
}

// checkOffDiagonalDistance compares the classifier's scores with
// OffDiagShrink to the Mahalanobis distance under ShrinkSeparate's
// covariance, solved directly.
func checkOffDiagonalDistance(t *testing.T, protos []Gaussian, z []float32, n int) {
	t.Helper()
	const g1, g2 = 1.0, 1.0
	clf := build(t, protos, ClassifierOptions{Shrink: g1, OffDiagShrink: g2})
	plain := build(t, protos, ClassifierOptions{Shrink: g1})
	scores, plainScores := clf.Scores(z, n), plain.Scores(z, n)
	s := protos[0].Dim()
	changed := 0
	for c, p := range protos {
		var chol mat.Cholesky
		if !chol.Factorize(ShrinkSeparate(p.Cov, g1, g2)) {
			t.Fatalf("class %d: shrunk covariance not positive definite", c)
		}
		for i := range n {
			d := mat.NewVecDense(s, nil)
			for j := range s {
				d.SetVec(j, float64(z[i*s+j])-p.Mean[j])
			}
			var x mat.VecDense
			if err := chol.SolveVecTo(&x, d); err != nil {
				t.Fatal(err)
			}
			want := mat.Dot(d, &x)
			got := float64(scores[i*len(protos)+c])
			if math.Abs(got-want) > 1e-4*want {
				t.Fatalf("class %d, image %d: score %v, want %v", c, i, got, want)
			}
			if scores[i*len(protos)+c] != plainScores[i*len(protos)+c] {
				changed++
			}
		}
	}
	if changed < n*len(protos)/2 {
		t.Errorf("off-diagonal shrinkage changed only %d of %d scores", changed, n*len(protos))
	}
}

func build(t *testing.T, protos []Gaussian, opts ClassifierOptions) *Classifier {
	t.Helper()
	c, err := NewClassifier(protos, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func block(v []float32, c, size int) []float32 { return v[c*size : (c+1)*size] }

func tablesEqual(a, b ClassifierTables) bool {
	return a.K == b.K && a.S == b.S && a.Normalize == b.Normalize &&
		slices.Equal(a.Means, b.Means) && slices.Equal(a.Whiten, b.Whiten) && slices.Equal(a.Bias, b.Bias)
}
