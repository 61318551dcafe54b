package export

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
)

// TestFitCalibration fits on features sampled from the prototypes
// themselves, class IDs out of column order, and checks that a fresh
// sample is accepted at the requested rate, and the refusals.
func TestFitCalibration(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	protos := randomGaussians(rng, 3, 6)
	clf, err := gauss.NewClassifier(protos, nil, gauss.DefaultClassifierOptions())
	if err != nil {
		t.Fatal(err)
	}
	classes := []bundle.Class{{ID: 7}, {ID: 2}, {ID: 4}}
	sample := func(n int) ([]float32, []int) {
		var x []float32
		var ids []int
		for c, g := range protos {
			s, err := g.Sample(rng, n)
			if err != nil {
				t.Fatal(err)
			}
			x = append(x, s...)
			for range n {
				ids = append(ids, classes[c].ID)
			}
		}
		return x, ids
	}
	x, ids := sample(1000)
	cal, err := FitCalibration(clf, gauss.ClassifierOptions{}, classes, nil, clf.Scores(x, len(ids)), nil, ids, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	if cal.HeldOutImages != 3000 || cal.AcceptRate != 0.9 || len(cal.ClassScales) != 3 {
		t.Fatalf("calibration %+v", cal)
	}
	test, _ := sample(1000)
	scores := clf.Scores(test, 3000)
	accepted := 0
	for i := range 3000 {
		if cal.Gauss().UnknownScore(scores[i*3:(i+1)*3], nil) <= cal.Threshold {
			accepted++
		}
	}
	if rate := float64(accepted) / 3000; math.Abs(rate-0.9) > 0.02 {
		t.Errorf("accepted %.3f of fresh known images, asked 0.9", rate)
	}
	ids[0] = 99
	if _, err := FitCalibration(clf, gauss.ClassifierOptions{}, classes, nil, clf.Scores(x, len(ids)), nil, ids, 0.9); err == nil || !strings.Contains(err.Error(), "class 99") {
		t.Errorf("unknown class: error %v", err)
	}
	ids[0] = 7
	if _, err := FitCalibration(clf, gauss.ClassifierOptions{}, classes, nil, clf.Scores(x[:6*10], 10), nil, ids[:10], 0.9); err == nil || !strings.Contains(err.Error(), "10 held-out images") {
		t.Errorf("too few images: error %v", err)
	}
}
