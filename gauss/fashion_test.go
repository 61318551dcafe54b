package gauss

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/bicyc/bicyc/data"
)

// loadFashion reads Fashion-MNIST once for all the package's tests.
var loadFashion = sync.OnceValues(func() ([2]*data.Dataset, error) {
	train, test, err := data.LoadFashionMNIST("")
	return [2]*data.Dataset{train, test}, err
})

// fashionSets returns the Fashion-MNIST training and test sets.
func fashionSets(t testing.TB) (train, test *data.Dataset) {
	t.Helper()
	sets, err := loadFashion()
	if err != nil {
		t.Fatalf("%v (apt-get install dataset-fashion-mnist)", err)
	}
	return sets[0], sets[1]
}

// fashionFeatures returns 7x7 average-pooled pixels (4x4 blocks, scaled to
// [0, 1]) of a Fashion-MNIST image set, [n, 49], and the labels.
func fashionFeatures(ds *data.Dataset) ([]float32, []int, int) {
	n := ds.Len()
	const s = 49
	x := make([]float32, n*s)
	for i := range n {
		img := ds.Image(i)
		for by := range 7 {
			for bx := range 7 {
				var sum int
				for y := by * 4; y < by*4+4; y++ {
					for xx := bx * 4; xx < bx*4+4; xx++ {
						sum += int(img[y*28+xx])
					}
				}
				x[i*s+by*7+bx] = float32(sum) / (16 * 255)
			}
		}
	}
	return x, slices.Clone(ds.Labels), n
}

// TestFashionMNIST fits one Gaussian per class on pooled pixels of the
// Fashion-MNIST training set and classifies the test set. The thresholds sit
// two points below the measured accuracies (default options 0.755,
// Mahalanobis with shrink 0.1 0.793, full Gaussian with shrink 0.01 0.725)
// so that a wrong normalisation, sign or class order fails while BLAS
// rounding does not. The drift diagnostics between train and test statistics
// of the same class must be much smaller than between different classes;
// eps is 1e-3 because border pixels are nearly constant (variance ~0 against
// a mean variance of ~0.03), which makes the KL of the bare covariances
// meaningless (measured: same class up to 1.5, other classes from 72).
func TestFashionMNIST(t *testing.T) {
	const s = 49
	trainSet, testSet := fashionSets(t)
	xTrain, yTrain, nTrain := fashionFeatures(trainSet)
	xTest, yTest, nTest := fashionFeatures(testSet)
	train := classGaussians(t, xTrain, yTrain, nTrain, s)
	test := classGaussians(t, xTest, yTest, nTest, s)

	cases := []struct {
		opts ClassifierOptions
		min  float64
	}{
		{DefaultClassifierOptions(), 0.735},
		{ClassifierOptions{Shrink: 0.1}, 0.775},
		{ClassifierOptions{Shrink: 0.01, FullGaussian: true}, 0.705},
	}
	for i, c := range cases {
		cl, err := NewClassifier(train, nil, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		pred := cl.Predict(xTest, nTest, nil)
		acc := accuracy(pred, yTest)
		t.Logf("case %d %+v: test accuracy %.4f", i, c.opts, acc)
		if acc < c.min {
			t.Errorf("case %d: accuracy %.4f, want >= %.2f", i, acc, c.min)
		}
		// Task-aware over classes {0, 2, 4, 6} (T-shirt, pullover, coat,
		// shirt, the most confused group): predictions stay in the set.
		allowed := []int{6, 0, 4, 2}
		for r, p := range cl.Predict(xTest, nTest, allowed) {
			if !slices.Contains(allowed, p) {
				t.Fatalf("case %d: row %d predicted %d outside %v", i, r, p, allowed)
			}
		}
	}

	var same, other float64
	for c := range 10 {
		d, err := Drift(train[c], test[c], 1e-3)
		if err != nil {
			t.Fatal(err)
		}
		same = max(same, d.SymmetricKL)
		o, err := Drift(train[c], test[(c+1)%10], 1e-3)
		if err != nil {
			t.Fatal(err)
		}
		if other == 0 || o.SymmetricKL < other {
			other = o.SymmetricKL
		}
	}
	t.Logf("symmetric KL train vs test: same class max %.3g, neighbouring class min %.3g", same, other)
	if same*20 > other {
		t.Errorf("same-class symmetric KL %.3g not well below other-class %.3g", same, other)
	}
}

func classGaussians(t *testing.T, x []float32, y []int, n, s int) []Gaussian {
	t.Helper()
	rows := make([][]float32, 10)
	for i := range n {
		rows[y[i]] = append(rows[y[i]], x[i*s:(i+1)*s]...)
	}
	out := make([]Gaussian, 10)
	for c := range out {
		g, err := Estimate(rows[c], len(rows[c])/s, s)
		if err != nil {
			t.Fatal(fmt.Errorf("class %d: %w", c, err))
		}
		out[c] = g
	}
	return out
}

func accuracy(pred, y []int) float64 {
	var ok int
	for i := range pred {
		if pred[i] == y[i] {
			ok++
		}
	}
	return float64(ok) / float64(len(pred))
}
