package bundle

import (
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/bicyc/bicyc/gauss"
)

// fitGaussians are k well separated random Gaussians in s dimensions.
func fitGaussians(rng *rand.Rand, k, s int) []gauss.Gaussian {
	out := make([]gauss.Gaussian, k)
	for c := range out {
		mean := make([]float64, s)
		for i := range mean {
			mean[i] = 3 * rng.NormFloat64()
		}
		a := mat.NewDense(s, s, nil)
		for i := range s {
			for j := range s {
				a.Set(i, j, rng.NormFloat64())
			}
		}
		cov := mat.NewSymDense(s, nil)
		cov.SymOuterK(1/float64(s), a)
		for i := range s {
			cov.SetSym(i, i, cov.At(i, i)+0.5)
		}
		out[c] = gauss.Gaussian{Mean: mean, Cov: cov}
	}
	return out
}

// heldOutOf draws n features per class of protos, with their scores under
// clf and their columns.
func heldOutOf(t *testing.T, rng *rand.Rand, protos []gauss.Gaussian, clf *gauss.Classifier, n int) HeldOut {
	t.Helper()
	var h HeldOut
	for c, g := range protos {
		x, err := g.Sample(rng, n)
		if err != nil {
			t.Fatal(err)
		}
		h.Features = append(h.Features, x...)
		for range n {
			h.Columns = append(h.Columns, c)
		}
	}
	h.Scores = clf.Scores(h.Features, len(h.Columns))
	return h
}

// TestFitCalibrationDefaultScore fits on features sampled from the
// prototypes: an empty unknown score answers by gauss.DefaultUnknownScore,
// a chosen one by itself, each with the threshold of its own held-out
// quantiles; every score but mahalanobis (the calibration's own reference)
// has its quantiles; the scores that read the feature need it, and
// lengths that do not fit are refused.
func TestFitCalibrationDefaultScore(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	protos := fitGaussians(rng, 4, 5)
	opts := gauss.ClassifierOptions{Shrink: 3, Normalize: true}
	clf, err := gauss.NewClassifier(protos, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPrototypes(protos, clf.Tables().Bias, true)
	classes := []Class{{ID: 0, Task: 1}, {ID: 1, Task: 1}, {ID: 2, Task: 2}, {ID: 3, Task: 2}}
	h := heldOutOf(t, rng, protos, clf, 100)

	cal, score, err := FitCalibration(classes, p, opts, h, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	if score != gauss.DefaultUnknownScore || cal.HeldOutImages != 400 || cal.AcceptRate != 0.9 {
		t.Fatalf("empty score: answers by %q, %d images, rate %v", score, cal.HeldOutImages, cal.AcceptRate)
	}
	if want, err := cal.Gauss().ThresholdOf(score, 0.9); err != nil || cal.Threshold != want {
		t.Errorf("threshold %v, want %s's 90 %% quantile %v (%v)", cal.Threshold, score, want, err)
	}
	for _, u := range gauss.UnknownScores() {
		_, stored := cal.ScoreQuantiles[string(u)]
		if stored == (u == gauss.ScoreMahalanobis) {
			t.Errorf("score %s: quantiles stored %t", u, stored)
		}
	}

	opts.UnknownScore = gauss.ScoreEnergy
	cal, score, err = FitCalibration(classes, p, opts, h, 0.9)
	if err != nil || score != gauss.ScoreEnergy || cal.Threshold != mustThreshold(t, cal, score) {
		t.Errorf("chosen energy: answers by %q, threshold %v (%v)", score, cal.Threshold, err)
	}

	opts.UnknownScore = ""
	noFeatures := h
	noFeatures.Features = nil
	if _, _, err := FitCalibration(classes, p, opts, noFeatures, 0.9); err == nil || !strings.Contains(err.Error(), "vim") {
		t.Errorf("vim without features: error %v, want one naming the score", err)
	}
	short := h
	short.Scores = short.Scores[:10]
	if _, _, err := FitCalibration(classes, p, opts, short, 0.9); err == nil || !strings.Contains(err.Error(), "10 scores") {
		t.Errorf("short scores: error %v", err)
	}
	if _, _, err := FitCalibration(classes[:3], p, opts, h, 0.9); err == nil || !strings.Contains(err.Error(), "prototypes: 4 classes") {
		t.Errorf("3 classes for 4 prototypes: error %v", err)
	}
}

func mustThreshold(t *testing.T, cal *Calibration, u gauss.UnknownScore) float64 {
	t.Helper()
	v, err := cal.Gauss().ThresholdOf(u, cal.AcceptRate)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestOpenSetBackgroundIsTrainedClasses checks the one background rule:
// a class added from a few images (AddedImages) leaves the background,
// and so the residual of every feature, as it was; the same class trained
// moves it.
func TestOpenSetBackgroundIsTrainedClasses(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	protos := fitGaussians(rng, 4, 5)
	cal := gauss.Calibration{Temperature: 1, Scales: []float64{1, 1, 1, 1}, Reference: []float64{0, 1}}
	opts := gauss.ClassifierOptions{Shrink: 3, Normalize: true}
	p := NewPrototypes(protos, make([]float32, 4), true)
	trained := []Class{{ID: 0}, {ID: 1}, {ID: 2}, {ID: 3}}
	added := []Class{{ID: 0}, {ID: 1}, {ID: 2}, {ID: 3, AddedImages: 10}}
	three := NewPrototypes(protos[:3], make([]float32, 3), true)
	threeCal := gauss.Calibration{Temperature: 1, Scales: []float64{1, 1, 1}, Reference: []float64{0, 1}}

	withAdded, err := NewOpenSet(added, p, cal, opts)
	if err != nil {
		t.Fatal(err)
	}
	withoutIt, err := NewOpenSet(trained[:3], three, threeCal, opts)
	if err != nil {
		t.Fatal(err)
	}
	all, err := NewOpenSet(trained, p, cal, opts)
	if err != nil {
		t.Fatal(err)
	}
	z, err := protos[3].Sample(rng, 1)
	if err != nil {
		t.Fatal(err)
	}
	a := withAdded.Score(gauss.ScoreResidual, make([]float32, 4), z)
	b := withoutIt.Score(gauss.ScoreResidual, make([]float32, 3), z)
	c := all.Score(gauss.ScoreResidual, make([]float32, 4), z)
	if a != b || a == c {
		t.Errorf("residual with the class added %v, without it %v (want equal), with it trained %v (want different)", a, b, c)
	}
	if _, err := NewOpenSet(trained[:3], p, cal, opts); err == nil {
		t.Error("3 classes for 4 prototypes: no error")
	}
}
