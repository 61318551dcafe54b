package gauss

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// The robustness tests feed the package's public API the degenerate inputs
// training produces on real data: duplicate images (identical features),
// constant feature dimensions, fewer images than dimensions, classes of one
// image, rank-deficient and indefinite covariances, NaN and infinity. The
// features are the 49 pooled pixels of fashionFeatures on the Fashion-MNIST
// test set; its first half estimates prototypes and its second half is
// classified.

const pooledDim = 49

// fashionSplit is the pooled Fashion-MNIST test set in two halves.
type fashionSplit struct {
	x  []float32 // estimation half, [n, 49]
	y  []int
	tx []float32 // held-out half, [tn, 49]
	ty []int
}

var (
	splitOnce  sync.Once
	splitValue fashionSplit
)

func loadFashionSplit(t *testing.T) fashionSplit {
	t.Helper()
	splitOnce.Do(func() {
		_, test := fashionSets(t)
		x, y, n := fashionFeatures(test)
		h := n / 2
		splitValue = fashionSplit{x: x[:h*pooledDim], y: y[:h], tx: x[h*pooledDim:], ty: y[h:]}
	})
	if splitValue.x == nil {
		t.Fatal("Fashion-MNIST features did not load")
	}
	return splitValue
}

// classRows returns up to count rows of class cls from x (labels y), in
// order, and how many it found.
func classRows(x []float32, y []int, cls, count int) ([]float32, int) {
	var rows []float32
	n := 0
	for i, label := range y {
		if label == cls && n < count {
			rows = append(rows, x[i*pooledDim:(i+1)*pooledDim]...)
			n++
		}
	}
	return rows, n
}

// estimateClasses estimates one prototype per class from perClass rows of
// the estimation half.
func estimateClasses(t *testing.T, sp fashionSplit, perClass int) []Gaussian {
	t.Helper()
	protos := make([]Gaussian, 10)
	for c := range protos {
		rows, n := classRows(sp.x, sp.y, c, perClass)
		g, err := Estimate(rows, n, pooledDim)
		if err != nil {
			t.Fatalf("class %d: %v", c, err)
		}
		protos[c] = g
	}
	return protos
}

// heldOutAccuracy builds the classifier and returns its accuracy on the
// held-out half, failing the test on any error or non-finite score.
func heldOutAccuracy(t *testing.T, sp fashionSplit, protos []Gaussian, opts ClassifierOptions) (float64, *Classifier) {
	t.Helper()
	cl, err := NewClassifier(protos, nil, opts)
	if err != nil {
		t.Fatalf("options %+v: %v", opts, err)
	}
	n := len(sp.ty)
	for i, v := range cl.Scores(sp.tx, n) {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("options %+v: score %d (image %d, class %d) is %v", opts, i, i/cl.Classes(), i%cl.Classes(), v)
		}
	}
	return accuracy(cl.Predict(sp.tx, n, nil), sp.ty), cl
}

// TestDuplicateImages estimates a class from 20 copies of one image: the
// covariance is exactly the ridge, 1e-8 I, which factorises directly, and
// a classifier holding that class next to nine estimated ones still scores
// every image finitely, recognises the duplicated image, and classifies the
// other classes as well as without it.
func TestDuplicateImages(t *testing.T) {
	sp := loadFashionSplit(t)
	row, _ := classRows(sp.x, sp.y, 0, 1)
	dup := slices.Repeat(row, 20)
	g, err := Estimate(dup, 20, pooledDim)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pooledDim {
		if g.Mean[i] != float64(row[i]) {
			t.Fatalf("mean[%d] = %v, want the image's %v", i, g.Mean[i], row[i])
		}
		for j := range pooledDim {
			want := 0.0
			if i == j {
				want = Ridge
			}
			if g.Cov.At(i, j) != want {
				t.Fatalf("covariance[%d][%d] = %v, want %v", i, j, g.Cov.At(i, j), want)
			}
		}
	}
	if _, fb, err := Cholesky(g.Cov); err != nil || fb != Direct {
		t.Fatalf("Cholesky of the ridge: %v, %v; want direct", fb, err)
	}
	protos := estimateClasses(t, sp, 200)
	withDup := slices.Clone(protos)
	withDup[0] = g
	for i, opts := range []ClassifierOptions{DefaultClassifierOptions(), {Shrink: 0}, {Shrink: 0.1, FullGaussian: true}} {
		base, _ := heldOutAccuracy(t, sp, protos, opts)
		acc, cl := heldOutAccuracy(t, sp, withDup, opts)
		if p := cl.Predict(row, 1, nil)[0]; p != 0 {
			t.Errorf("case %d: the duplicated image is predicted as class %d, want 0", i, p)
		}
		// Accuracy over the held-out images of classes 1-9 only.
		var hit, total int
		pred := cl.Predict(sp.tx, len(sp.ty), nil)
		for j, y := range sp.ty {
			if y != 0 {
				total++
				if pred[j] == y {
					hit++
				}
			}
		}
		rest := float64(hit) / float64(total)
		t.Logf("case %d %+v: held-out accuracy %.4f with 200 images of class 0, %.4f with its duplicates (classes 1-9: %.4f), fallbacks %v",
			i, opts, base, acc, rest, cl.Fallbacks()[0])
		if rest < base-0.02 {
			t.Errorf("case %d: a degenerate class 0 drags classes 1-9 to %.4f (all classes with 200 images: %.4f)", i, rest, base)
		}
	}
}

// TestConstantFeatures sets the seven features of the top row of blocks to
// one constant in every image, as dead units of a backbone would: their
// covariance rows are the ridge alone, every factorisation is direct, and
// accuracy stays within a point of the unmodified features (the top row of
// Fashion-MNIST is nearly blank anyway).
func TestConstantFeatures(t *testing.T) {
	sp := loadFashionSplit(t)
	dead := fashionSplit{x: slices.Clone(sp.x), y: sp.y, tx: slices.Clone(sp.tx), ty: sp.ty}
	for _, x := range [][]float32{dead.x, dead.tx} {
		for i := 0; i < len(x); i += pooledDim {
			for j := range 7 {
				x[i+j] = 0.25
			}
		}
	}
	protos := estimateClasses(t, dead, 500)
	for c, g := range protos {
		if _, fb, err := Cholesky(g.Cov); err != nil || fb != Direct {
			t.Errorf("class %d: Cholesky %v, %v; want direct", c, fb, err)
		}
		if v := g.Cov.At(3, 3); v != Ridge {
			t.Errorf("class %d: variance of a constant feature %v, want the ridge %v", c, v, Ridge)
		}
	}
	for i, opts := range []ClassifierOptions{DefaultClassifierOptions(), {Shrink: 0.1}} {
		base, _ := heldOutAccuracy(t, sp, estimateClasses(t, sp, 500), opts)
		acc, cl := heldOutAccuracy(t, dead, protos, opts)
		t.Logf("case %d %+v: held-out accuracy %.4f with constant features, %.4f without; fallbacks %v", i, opts, acc, base, cl.Fallbacks())
		if acc < base-0.02 {
			t.Errorf("case %d: accuracy %.4f with constant features, %.4f without", i, acc, base)
		}
	}
}

// TestFewerImagesThanDimensions estimates every class from n images, n from
// 2 to above S = 49: below S the sample covariance is singular (rank n-1)
// and only the ridge keeps it positive definite. Estimate, Cholesky and the
// classifier must work for every n; with the published options (shrink 3,
// normalisation) accuracy must stay far above chance (0.1): measured 0.56
// with 2 images, 0.63 with 5, 0.73 with 49, 0.75 with 200.
func TestFewerImagesThanDimensions(t *testing.T) {
	sp := loadFashionSplit(t)
	for i, n := range []int{2, 5, 10, 48, 49, 50, 200} {
		protos := estimateClasses(t, sp, n)
		var fallbacks []Fallback
		for c, g := range protos {
			_, fb, err := Cholesky(g.Cov)
			if err != nil {
				t.Fatalf("case %d n=%d class %d: %v", i, n, c, err)
			}
			fallbacks = append(fallbacks, fb)
		}
		acc, _ := heldOutAccuracy(t, sp, protos, DefaultClassifierOptions())
		mahal, cl := heldOutAccuracy(t, sp, protos, ClassifierOptions{Shrink: 0})
		t.Logf("case %d: %d images per class: accuracy %.4f (shrink 3, normalize), %.4f (no shrinkage; classifier fallbacks %v); raw covariance fallbacks %v",
			i, n, acc, mahal, cl.Fallbacks(), fallbacks)
		if want := min(0.5+0.02*float64(n), 0.6); acc < want {
			t.Errorf("case %d: %d images per class: accuracy %.4f, want >= %.2f", i, n, acc, want)
		}
	}
}

// TestOneImagePerClass: Estimate refuses a class of one image
// (ErrTooFewSamples) and EstimateDiagonal is the documented fallback, with
// the mean variance of the classes already estimated as its prior, as
// training does. A classifier of five such classes and five estimated ones
// recognises the single images and classifies far above chance (measured
// 0.656). With normalisation the prior cannot matter: the correlation
// matrix of p*I is I whatever p; without it, it does.
func TestOneImagePerClass(t *testing.T) {
	sp := loadFashionSplit(t)
	row, _ := classRows(sp.x, sp.y, 0, 1)
	if _, err := Estimate(row, 1, pooledDim); !errors.Is(err, ErrTooFewSamples) {
		t.Fatalf("Estimate of one image: %v, want ErrTooFewSamples", err)
	}
	protos := estimateClasses(t, sp, 200)
	prior := MeanVariance(protos[5:])
	plain := make([]float64, 2)
	for i, p := range []float64{1, prior} {
		mixed := slices.Clone(protos)
		var singles []float32
		for c := range 5 {
			r, _ := classRows(sp.x, sp.y, c, 1)
			singles = append(singles, r...)
			g, err := EstimateDiagonal(r, 1, pooledDim, p)
			if err != nil {
				t.Fatal(err)
			}
			if g.Cov.At(0, 0) != p+Ridge || g.Cov.At(0, 1) != 0 {
				t.Fatalf("prior %v: covariance entries %v, %v; want %v and 0", p, g.Cov.At(0, 0), g.Cov.At(0, 1), p+Ridge)
			}
			mixed[c] = g
		}
		acc, cl := heldOutAccuracy(t, sp, mixed, DefaultClassifierOptions())
		if got := cl.Predict(singles, 5, nil); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
			t.Errorf("case %d: the single images are predicted as %v, want [0 1 2 3 4]", i, got)
		}
		plain[i], _ = heldOutAccuracy(t, sp, mixed, ClassifierOptions{Shrink: 0.1})
		t.Logf("case %d: prior variance %.4g: held-out accuracy %.4f with classes 0-4 of one image each (%.4f without normalisation)", i, p, acc, plain[i])
		if acc < 0.63 {
			t.Errorf("case %d: accuracy %.4f, want >= 0.63", i, acc)
		}
	}
	// Without normalisation a prior of 1, some 30 times the features'
	// variance, spreads the one-image classes over everything (measured
	// 0.256); the mean variance of the estimated classes does not (0.605).
	if plain[1] < plain[0]+0.2 {
		t.Errorf("without normalisation: accuracy %.4f with the mean-variance prior, %.4f with prior 1", plain[1], plain[0])
	}
}

// TestRankDeficientCovariances hands the classifier covariances that no
// estimate produces but a damaged or hand-made prototype can: an exact
// rank-4 covariance (5 images, ridge removed), one made indefinite by
// subtracting half its mean variance, and a negated one. Without
// normalisation the Cholesky fallbacks repair them (Fallbacks says how)
// and every score stays finite; with normalisation a covariance whose
// shrunk diagonal is not positive is an error naming the class.
func TestRankDeficientCovariances(t *testing.T) {
	sp := loadFashionSplit(t)
	protos := estimateClasses(t, sp, 200)
	rows, n := classRows(sp.x, sp.y, 3, 5)
	rank4, err := Estimate(rows, n, pooledDim)
	if err != nil {
		t.Fatal(err)
	}
	addDiagonal(rank4.Cov, -Ridge)
	indefinite := Gaussian{Mean: protos[4].Mean, Cov: mat.NewSymDense(pooledDim, nil)}
	indefinite.Cov.CopySym(protos[4].Cov)
	addDiagonal(indefinite.Cov, -0.5*meanDiagonal(protos[4].Cov))
	negated := Gaussian{Mean: protos[5].Mean, Cov: mat.NewSymDense(pooledDim, nil)}
	negated.Cov.ScaleSym(-1, protos[5].Cov)
	damaged := slices.Clone(protos)
	damaged[3], damaged[4], damaged[5] = rank4, indefinite, negated

	acc, cl := heldOutAccuracy(t, sp, damaged, ClassifierOptions{Shrink: 0})
	fb := cl.Fallbacks()
	t.Logf("no shrinkage: fallbacks %v, held-out accuracy %.4f", fb, acc)
	if fb[4] != EigenFloored || fb[5] != EigenFloored || fb[0] != Direct {
		t.Errorf("fallbacks %v: want direct for estimated classes and eigen-floored for classes 4 and 5", fb)
	}
	for i, opts := range []ClassifierOptions{{Shrink: 3}, {Shrink: 0.1, FullGaussian: true}} {
		acc, cl := heldOutAccuracy(t, sp, damaged, opts)
		t.Logf("case %d %+v: fallbacks %v, held-out accuracy %.4f", i, opts, cl.Fallbacks(), acc)
	}
	_, err = NewClassifier(damaged, nil, DefaultClassifierOptions())
	if !errors.Is(err, ErrNotPositiveDefinite) || !strings.Contains(err.Error(), "class 5") {
		t.Errorf("normalised classifier over a negated covariance: %v, want ErrNotPositiveDefinite naming class 5", err)
	}
}

// TestNonFiniteInputs puts NaN or infinity into every public entry point
// that takes features or prototypes: each returns an error wrapping
// ErrNonFinite that says where the value is, and Scores/Predict mark the
// row without touching the others.
func TestNonFiniteInputs(t *testing.T) {
	sp := loadFashionSplit(t)
	rows, n := classRows(sp.x, sp.y, 2, 100)
	good, err := Estimate(rows, n, pooledDim)
	if err != nil {
		t.Fatal(err)
	}
	nanRows := slices.Clone(rows)
	nanRows[3*pooledDim+5] = float32(math.NaN())
	infRows := slices.Clone(rows)
	infRows[7*pooledDim] = float32(math.Inf(-1))
	nanMean := Gaussian{Mean: slices.Clone(good.Mean), Cov: good.Cov}
	nanMean.Mean[10] = math.NaN()
	infCov := Gaussian{Mean: good.Mean, Cov: mat.NewSymDense(pooledDim, nil)}
	infCov.Cov.CopySym(good.Cov)
	infCov.Cov.SetSym(1, 2, math.Inf(1))
	identity := func(x []float32, n int) ([]float32, error) { return x, nil }
	poisoned := func(x []float32, n int) ([]float32, error) {
		y := slices.Clone(x)
		y[len(y)/2] = float32(math.NaN())
		return y, nil
	}
	point := slices.Clone(good.Mean)
	cases := []struct {
		call func() error
		text string
	}{
		{func() error { _, err := Estimate(nanRows, n, pooledDim); return err }, "row 3, column 5 is NaN"},
		{func() error { _, err := Estimate(infRows, n, pooledDim); return err }, "row 7, column 0 is -Inf"},
		{func() error { _, err := EstimateDiagonal(nanRows, n, pooledDim, 1); return err }, "row 3, column 5 is NaN"},
		{func() error { _, _, err := Cholesky(infCov.Cov); return err }, "entry [1][2] is +Inf"},
		{func() error {
			_, err := NewClassifier([]Gaussian{good, good, nanMean}, nil, DefaultClassifierOptions())
			return err
		}, "class 2: gauss: mean[10] = NaN"},
		{func() error { _, err := NewClassifier([]Gaussian{infCov}, nil, ClassifierOptions{}); return err }, "class 0: gauss: covariance[1][2] = +Inf"},
		{func() error { _, err := nanMean.Sample(rand.New(rand.NewPCG(1, 2)), 10); return err }, "mean[10] = NaN"},
		{func() error { _, err := Transport(good, poisoned, 100, rand.New(rand.NewPCG(1, 2))); return err }, "feature map output"},
		{func() error { _, err := Transport(infCov, identity, 100, rand.New(rand.NewPCG(1, 2))); return err }, "covariance[1][2] = +Inf"},
		{func() error { _, err := nanMean.SquaredMahalanobis(point); return err }, "mean[10] = NaN"},
		{func() error {
			p := slices.Clone(point)
			p[4] = math.Inf(-1)
			_, err := good.SquaredMahalanobis(p)
			return err
		}, "point[4] = -Inf"},
		{func() error { _, err := KL(good, infCov); return err }, "second Gaussian"},
		{func() error { _, err := Drift(nanMean, good, 1e-6); return err }, "first Gaussian"},
	}
	for i, c := range cases {
		err := c.call()
		if !errors.Is(err, ErrNonFinite) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("case %d: error %v, want ErrNonFinite mentioning %q", i, err, c.text)
		}
	}

	cl, err := NewClassifier(estimateClasses(t, sp, 200), nil, DefaultClassifierOptions())
	if err != nil {
		t.Fatal(err)
	}
	z := slices.Clone(sp.tx[:3*pooledDim])
	z[pooledDim+8] = float32(math.NaN())
	scores := cl.Scores(z, 3)
	clean := cl.Scores(slices.Concat(sp.tx[:pooledDim], sp.tx[2*pooledDim:3*pooledDim]), 2)
	for c := range 10 {
		if !math.IsNaN(float64(scores[10+c])) {
			t.Errorf("score of the NaN row for class %d is %v, want NaN", c, scores[10+c])
		}
		if scores[c] != clean[c] || scores[20+c] != clean[10+c] {
			t.Errorf("class %d: the NaN row changed its neighbours' scores", c)
		}
	}
	if pred := cl.Predict(z, 3, nil); pred[1] != NoClass || pred[0] == NoClass || pred[2] == NoClass {
		t.Errorf("Predict = %v, want NoClass only for row 1", pred)
	}
}
