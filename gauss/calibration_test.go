package gauss

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// calibrationSample draws n images per class from the Gaussians and returns
// their classifier scores [n*K, K] and labels.
func calibrationSample(t *testing.T, clf *Classifier, protos []Gaussian, n int, rng *rand.Rand) ([]float32, []int) {
	t.Helper()
	var z []float32
	var labels []int
	for c, g := range protos {
		x, err := g.Sample(rng, n)
		if err != nil {
			t.Fatal(err)
		}
		z = append(z, x...)
		for range n {
			labels = append(labels, c)
		}
	}
	return clf.Scores(z, len(labels)), labels
}

// threeClasses are overlapping Gaussians in 4 dimensions with different
// spreads, so one global distance threshold would not fit them all.
func threeClasses() []Gaussian {
	diag := func(v float64) *mat.SymDense {
		return mat.NewSymDense(4, []float64{v, 0, 0, 0, 0, v, 0, 0, 0, 0, v, 0, 0, 0, 0, v})
	}
	return []Gaussian{
		{Mean: []float64{0, 0, 0, 0}, Cov: diag(1)},
		{Mean: []float64{3, 0, 0, 0}, Cov: diag(0.25)},
		{Mean: []float64{0, 4, 0, 0}, Cov: diag(4)},
	}
}

// TestCalibrationAcceptRate fits on one sample and checks on another that
// the requested share of known images is accepted (within 2 points), that
// images from far away are rejected, and that the posterior is a
// distribution that favours the true class.
func TestCalibrationAcceptRate(t *testing.T) {
	protos := threeClasses()
	clf, err := NewClassifier(protos, nil, ClassifierOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	fitScores, fitLabels := calibrationSample(t, clf, protos, 400, rng)
	cal, err := FitCalibration(fitScores, len(fitLabels), 3, fitLabels, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cal.Validate(3); err != nil {
		t.Fatal(err)
	}
	// A chi-square with 4 degrees of freedom has median about 3.36: the
	// scales of unshrunk Gaussians are near it whatever their spread.
	for c, s := range cal.Scales {
		if s < 2.5 || s > 4.5 {
			t.Errorf("class %d scale %.3g, want near 3.36", c, s)
		}
	}
	testScores, testLabels := calibrationSample(t, clf, protos, 1000, rng)
	for i, rate := range []float64{0.8, 0.95, 0.99} {
		tau := cal.Threshold(rate)
		accepted := 0
		for j := range testLabels {
			if cal.UnknownScore(testScores[j*3:(j+1)*3], nil) <= tau {
				accepted++
			}
		}
		got := float64(accepted) / float64(len(testLabels))
		if math.Abs(got-rate) > 0.02 {
			t.Errorf("case %d: accepted %.3f of known images, asked %.2f", i, got, rate)
		}
	}
	far := Gaussian{Mean: []float64{-8, -8, 8, 8}, Cov: threeClasses()[0].Cov}
	farScores, _ := calibrationSample(t, clf, []Gaussian{far}, 200, rng)
	for j := range 200 {
		if u := cal.UnknownScore(farScores[j*3:(j+1)*3], nil); u <= cal.Threshold(0.95) {
			t.Fatalf("far image %d: unknown score %.3g accepted (tau %.3g)", j, u, cal.Threshold(0.95))
		}
	}
	var correct, sure float64
	for j, y := range testLabels {
		p := cal.Posterior(testScores[j*3 : (j+1)*3])
		if s := p[0] + p[1] + p[2]; math.Abs(s-1) > 1e-9 {
			t.Fatalf("posterior of image %d sums to %v", j, s)
		}
		best := 0
		for c := range p {
			if p[c] > p[best] {
				best = c
			}
		}
		if best == y {
			correct++
		}
		sure += p[best]
	}
	// Calibrated: the mean confidence matches the accuracy within a few
	// points.
	n := float64(len(testLabels))
	if math.Abs(correct/n-sure/n) > 0.03 {
		t.Errorf("mean confidence %.3f, accuracy %.3f", sure/n, correct/n)
	}
}

// TestCalibrationBayesTemperature: on FullGaussian scores of the true
// model, the posterior is already the Bayes one, so the fitted temperature
// is near 1.
func TestCalibrationBayesTemperature(t *testing.T) {
	protos := threeClasses()
	clf, err := NewClassifier(protos, nil, ClassifierOptions{FullGaussian: true})
	if err != nil {
		t.Fatal(err)
	}
	scores, labels := calibrationSample(t, clf, protos, 2000, rand.New(rand.NewPCG(5, 6)))
	cal, err := FitCalibration(scores, len(labels), 3, labels, clf.Tables().Bias)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(cal.Temperature-1) > 0.1 {
		t.Errorf("temperature %.3f, want about 1", cal.Temperature)
	}
}

// TestCalibrationErrors pins each bad-data error.
func TestCalibrationErrors(t *testing.T) {
	labels := make([]int, MinCalibrationImages)
	scores := make([]float32, MinCalibrationImages*2)
	cases := []struct {
		scores []float32
		n      int
		labels []int
		bias   []float32
	}{
		{scores[:2*(MinCalibrationImages-1)], MinCalibrationImages - 1, labels[:MinCalibrationImages-1], nil},
		{scores, MinCalibrationImages, append([]int{2}, labels[1:]...), nil},
		{append([]float32{float32(math.NaN())}, scores[1:]...), MinCalibrationImages, labels, nil},
		{scores, MinCalibrationImages, labels, []float32{0, 5}},
		{scores[1:], MinCalibrationImages, labels, nil},
	}
	for i, tc := range cases {
		if _, err := FitCalibration(tc.scores, tc.n, 2, tc.labels, tc.bias); !errors.Is(err, ErrCalibration) {
			t.Errorf("case %d: error %v, want ErrCalibration", i, err)
		}
	}
	bad := []Calibration{
		{Temperature: 0, Scales: []float64{1}, Reference: []float64{1}},
		{Temperature: 1, Scales: []float64{0}, Reference: []float64{1}},
		{Temperature: 1, Scales: []float64{1}, Reference: []float64{2, 1}},
		{Temperature: 1, Scales: []float64{1, 1}, Reference: []float64{1}},
	}
	for i, c := range bad {
		if err := c.Validate(1); !errors.Is(err, ErrCalibration) {
			t.Errorf("validate case %d: error %v, want ErrCalibration", i, err)
		}
	}
}

// TestCalibrationWithClasses: added classes get the median scale and the
// reference is kept.
func TestCalibrationWithClasses(t *testing.T) {
	c := Calibration{Temperature: 2, Scales: []float64{1, 3, 2}, Reference: []float64{0.5, 1}}
	got := c.WithClasses(5)
	if want := []float64{1, 3, 2, 2, 2}; len(got.Scales) != 5 || got.Scales[3] != want[3] || got.Scales[4] != want[4] {
		t.Fatalf("scales %v, want %v", got.Scales, want)
	}
	if got.Threshold(1) != 1 || len(c.Scales) != 3 {
		t.Fatalf("reference or original changed: %+v, %+v", got, c)
	}
}
