package gauss

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGaussianWeightHandComputed: with head softmax, gaussian_weight 10 and
// age bias -0.3, class c's score is the softmax head's ||z - m_c||^2 + b_c
// (its tables, SoftmaxTables), plus -0.3 per task of the class's age, plus
// 10 times the Mahalanobis distance to the class's shrunk Gaussian,
// computed here by hand: two classes in 2-D with diagonal covariances,
// shrink 1 (adds mean(diag) to the diagonal) and no normalisation, so
//
//	class 0: N((1, 0), diag(1, 3)), Sigma' = diag(3, 5) + 1e-8 I, age 1
//	class 1: N((0, 2), diag(2, 2)), Sigma' = diag(4, 4) + 1e-8 I, age 0
func TestGaussianWeightHandComputed(t *testing.T) {
	protos := []Gaussian{diagGaussian([]float64{1, 0}, 1, 3), diagGaussian([]float64{0, 2}, 2, 2)}
	ages := []int{1, 0}
	opts := ClassifierOptions{Shrink: 1, Head: HeadSoftmax, AgeBias: -0.3, GaussianWeight: 10}
	clf, err := NewClassifier(protos, nil, opts.WithAges(ages))
	if err != nil {
		t.Fatal(err)
	}
	headMeans, headBias, err := SoftmaxTables(protos, false)
	if err != nil {
		t.Fatal(err)
	}
	maha := func(c int, z []float64) float64 {
		if c == 0 {
			return (z[0]-1)*(z[0]-1)/(3+Ridge) + z[1]*z[1]/(5+Ridge)
		}
		return z[0]*z[0]/(4+Ridge) + (z[1]-2)*(z[1]-2)/(4+Ridge)
	}
	points := [][]float64{{0, 0}, {1, 0}, {0, 2}, {0.5, 1}, {-2, 3}, {3, -1}}
	var z []float32
	for _, p := range points {
		z = append(z, float32(p[0]), float32(p[1]))
	}
	scores := clf.Scores(z, len(points))
	var worst float64
	for i, p := range points {
		for c := range 2 {
			dx, dy := p[0]-headMeans[2*c], p[1]-headMeans[2*c+1]
			want := dx*dx + dy*dy + headBias[c] - 0.3*float64(ages[c]) + 10*maha(c, p)
			got := float64(scores[2*i+c])
			worst = max(worst, math.Abs(got-want)/max(1, math.Abs(want)))
			if math.Abs(got-want) > 1e-5*max(1, math.Abs(want)) {
				t.Errorf("point %v, class %d: score %v, want head %v + age bias %v + 10 x Mahalanobis %v = %v",
					p, c, got, dx*dx+dy*dy+headBias[c], -0.3*float64(ages[c]), maha(c, p), want)
			}
		}
	}
	t.Logf("max relative error against the hand-computed scores: %.3g (bound 1e-5)", worst)
}

// TestGaussianWeightIsTheSumOfBothHeads: on random full-covariance
// Gaussians with the published options (normalised), the mixed classifier's
// scores are the softmax head's (with its age bias) plus lambda times the
// Gaussian classifier's (without it), each computed by its own Classifier,
// as bench/coldstart first measured the mixture; its tables reproduce them
// with lower-triangular whitening matrices; weight 0 is the head alone, bit
// for bit; and the options the Gaussian part reads (here age_shrink) change
// the mixture.
func TestGaussianWeightIsTheSumOfBothHeads(t *testing.T) {
	const k, s, n = 4, 6, 50
	rng := rand.New(rand.NewPCG(48, 10))
	protos := make([]Gaussian, k)
	for c := range protos {
		protos[c] = randomGaussian(rng, s)
	}
	ages := []int{3, 2, 1, 0}
	z := make([]float32, n*s)
	for i := range z {
		z[i] = float32(protos[i/s%k].Mean[i%s] + rng.NormFloat64())
	}
	head := DefaultClassifierOptions()
	head.Head, head.AgeBias = HeadSoftmax, -0.3
	scoresOf := func(o ClassifierOptions) []float32 {
		t.Helper()
		clf, err := NewClassifier(protos, nil, o.WithAges(ages))
		if err != nil {
			t.Fatal(err)
		}
		return clf.Scores(z, n)
	}
	headScores, gaussScores := scoresOf(head), scoresOf(DefaultClassifierOptions())
	mixed := head
	mixed.GaussianWeight = 10
	clf, err := NewClassifier(protos, nil, mixed.WithAges(ages))
	if err != nil {
		t.Fatal(err)
	}
	got := clf.Scores(z, n)
	var worst float64
	for i := range got {
		want := float64(headScores[i]) + 10*float64(gaussScores[i])
		worst = max(worst, math.Abs(float64(got[i])-want)/max(1, math.Abs(want)))
	}
	t.Logf("max relative difference from head + 10 x Gaussian: %.3g (bound 1e-5)", worst)
	if worst > 1e-5 {
		t.Errorf("mixed scores differ from head + 10 x Gaussian by %.3g (relative)", worst)
	}

	checkFactoredTables(t, clf.Tables(), z, n, got)

	zero := head
	zero.GaussianWeight = 0
	if !slices.Equal(scoresOf(zero), headScores) {
		t.Error("gaussian_weight 0 changed the softmax head's scores")
	}
	aged := mixed
	aged.AgeShrink = 1
	if slices.Equal(scoresOf(aged), got) {
		t.Error("age_shrink left the mixture unchanged: the Gaussian part ignores its options")
	}
}

// checkFactoredTables checks that tables t score the n features z ([n, S],
// normalised as t says) as ||W_c (zh - m_c)||^2 + b_c to 1e-4 of want
// ([n, K]), with every W_c lower triangular.
func checkFactoredTables(t *testing.T, tables ClassifierTables, z []float32, n int, got []float32) {
	t.Helper()
	k, s := tables.K, tables.S
	var worstTables float64
	for r := range n {
		zh := make([]float64, s)
		for j := range s {
			zh[j] = float64(z[r*s+j])
		}
		if tables.Normalize {
			normalizeL2(zh)
		}
		for c := range k {
			w := tables.Whiten[c*s*s : (c+1)*s*s]
			var d float64
			for i := range s {
				var y float64
				for j := range s {
					if j > i && w[i*s+j] != 0 {
						t.Fatalf("class %d: whitening [%d,%d] = %v, want lower triangular", c, i, j, w[i*s+j])
					}
					y += float64(w[i*s+j]) * (zh[j] - float64(tables.Means[c*s+j]))
				}
				d += y * y
			}
			d += float64(tables.Bias[c])
			worstTables = max(worstTables, math.Abs(d-float64(got[r*k+c]))/max(1, math.Abs(d)))
		}
	}
	t.Logf("max relative difference of the tables' factored score from Scores: %.3g (bound 1e-4)", worstTables)
	if worstTables > 1e-4 {
		t.Errorf("tables reproduce the mixed scores only to %.3g (relative)", worstTables)
	}
}
