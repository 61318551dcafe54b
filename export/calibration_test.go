package export

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
)

// sampleClasses draws n features from each prototype of in, class by
// class, and returns them with their class IDs.
func sampleClasses(t *testing.T, in Input, n int, rng *rand.Rand) ([]float32, []int) {
	t.Helper()
	var x []float32
	var ids []int
	for c, g := range in.Prototypes {
		s, err := g.Sample(rng, n)
		if err != nil {
			t.Fatal(err)
		}
		x = append(x, s...)
		for range n {
			ids = append(ids, in.Classes[c].ID)
		}
	}
	return x, ids
}

// TestWriteCalibrates exports with held-out features drawn from the
// prototypes themselves and checks the manifest's calibration: the default
// unknown score (vim) for empty options, its threshold accepting the asked
// share of a fresh sample of known features (as a reader scores them,
// through bundle.NewOpenSet), a chosen score kept, and the test-time flip
// averaging an image with its mirror (identical mirrors: the same fit).
func TestWriteCalibrates(t *testing.T) {
	fx := newExportFixture(t)
	rng := rand.New(rand.NewPCG(9, 10))
	const perClass, rate = 400, 0.9
	x, ids := sampleClasses(t, fx.in, perClass, rng)
	write := func(in Input) *bundle.Bundle {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "model")
		if err := Write(dir, in); err != nil {
			t.Fatal(err)
		}
		b, err := bundle.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	fx.in.Classifier.UnknownScore = ""
	fx.in.HeldOut = &HeldOut{Features: x, ClassIDs: ids, AcceptRate: rate}
	b := write(fx.in)
	cal := b.Manifest.Calibration
	if cal == nil || cal.HeldOutImages != 10*perClass || cal.AcceptRate != rate || len(cal.ClassScales) != 10 ||
		b.Manifest.Classifier.UnknownScore != gauss.ScoreViM {
		t.Fatalf("calibration %+v answering by %q, want one of %d images answering by vim", cal, b.Manifest.Classifier.UnknownScore, 10*perClass)
	}
	for _, u := range gauss.UnknownScores() {
		if !cal.Gauss().Has(u) {
			t.Errorf("calibration has no held-out quantiles of %s", u)
		}
	}
	o, err := bundle.NewOpenSet(b.Manifest.Classes, b.Prototypes, cal.Gauss(), b.Manifest.Classifier)
	if err != nil {
		t.Fatal(err)
	}
	test, _ := sampleClasses(t, fx.in, perClass, rng)
	n := 10 * perClass
	scores := fx.classifier.Scores(test, n)
	accepted := 0
	for i := range n {
		if o.Score(gauss.ScoreViM, scores[i*10:(i+1)*10], test[i*8:(i+1)*8]) <= cal.Threshold {
			accepted++
		}
	}
	if got := float64(accepted) / float64(n); math.Abs(got-rate) > 0.025 {
		t.Errorf("accepted %.3f of fresh known features, asked %.2f", got, rate)
	}

	fx.in.Classifier.UnknownScore = gauss.ScoreMahalanobis
	maha := write(fx.in)
	if mc := maha.Manifest.Calibration; maha.Manifest.Classifier.UnknownScore != gauss.ScoreMahalanobis ||
		mc.Threshold != mc.Gauss().Threshold(rate) {
		t.Errorf("chosen mahalanobis: manifest answers by %q, threshold %v", maha.Manifest.Classifier.UnknownScore, mc.Threshold)
	}

	fx.in.Classifier.UnknownScore, fx.in.Classifier.TestFlip = "", true
	fx.in.HeldOut = &HeldOut{Features: slices.Concat(x, x), ClassIDs: ids, AcceptRate: rate}
	flipped := write(fx.in).Manifest.Calibration
	if flipped.Threshold != cal.Threshold || !slices.Equal(flipped.HeldOutScores, cal.HeldOutScores) || flipped.Temperature != cal.Temperature {
		t.Errorf("with identical mirrors the flip fitted threshold %v, temperature %v; without, %v, %v",
			flipped.Threshold, flipped.Temperature, cal.Threshold, cal.Temperature)
	}
}
