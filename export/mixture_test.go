package export

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
)

// TestWriteGaussianWeight exports the softmax head with the age bias, alone
// (classifier.gaussian_weight 0) and mixed with the Gaussian classifier
// (10), and runs each model.onnx with ONNX Runtime on real Fashion-MNIST
// images: its scores are gauss.Classifier's for the manifest's options and
// ages, its best class is gauss's prediction, and the mixture's scores are
// the head's plus 10 times the Gaussian classifier's, each scored by gauss
// alone. The manifest records the weight, and leaves the key out at 0 (a
// manifest as before the option).
func TestWriteGaussianWeight(t *testing.T) {
	const n, k = 40, 10
	var headScores []float32
	for _, weight := range []float64{0, 10} {
		label := fmt.Sprintf("gaussian_weight %g", weight)
		fx := newExportFixture(t)
		fx.in.Classifier = gauss.ClassifierOptions{Shrink: 3, Normalize: true, Head: gauss.HeadSoftmax, AgeBias: -0.3, GaussianWeight: weight}
		for c := range fx.in.Classes {
			fx.in.Classes[c].Age = 2 - fx.in.Classes[c].Task // tasks 1 and 2
		}
		dir := filepath.Join(t.TempDir(), "model")
		if err := Write(dir, fx.in); err != nil {
			t.Fatal(err)
		}
		b, err := bundle.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Manifest.Classifier.GaussianWeight; got != weight {
			t.Errorf("%s: manifest gaussian_weight %g", label, got)
		}
		raw, err := os.ReadFile(filepath.Join(dir, bundle.ManifestFile))
		if err != nil {
			t.Fatal(err)
		}
		if written := strings.Contains(string(raw), `"gaussian_weight"`); written != (weight != 0) {
			t.Errorf("%s: manifest.json has the key: %v", label, written)
		}
		model, err := b.ReadFile(bundle.ModelFile)
		if err != nil {
			t.Fatal(err)
		}
		backbone, err := b.ReadFile(bundle.BackboneFile)
		if err != nil {
			t.Fatal(err)
		}
		images := fx.images[:n*28*28]
		feats := runModel(t, backbone, []string{bundle.TensorImage}, [][]float32{images}, [][]int64{{n, 1, 28, 28}},
			[]string{bundle.TensorFeatures})[0].([]float32)
		outs := runModelIn(t, dir, model, []string{bundle.TensorImage}, [][]float32{images}, [][]int64{{n, 1, 28, 28}},
			[]string{bundle.TensorScores})
		clf, err := gauss.NewClassifier(fx.in.Prototypes, nil, b.Manifest.Classifier.WithAges(bundle.Ages(b.Manifest.Classes)))
		if err != nil {
			t.Fatal(err)
		}
		scores := clf.Scores(feats, n)
		want := make([]float64, n*k)
		for i, v := range scores {
			want[i] = float64(v)
		}
		got := outs[0].([]float32)
		diff := checkTableScores(t, label+": model.onnx vs gauss", got, want, clf.Tables())
		for r, p := range clf.Predict(feats, n, nil) {
			if best := argmin(got[r*k : (r+1)*k]); best != p {
				t.Errorf("%s: image %d: model.onnx's best class %d, gauss %d", label, r, best, p)
			}
		}
		if weight == 0 {
			headScores = scores
			continue
		}
		g, err := gauss.NewClassifier(fx.in.Prototypes, nil, gauss.ClassifierOptions{Shrink: 3, Normalize: true})
		if err != nil {
			t.Fatal(err)
		}
		mixed := make([]float64, n*k)
		for i, v := range g.Scores(feats, n) {
			mixed[i] = float64(headScores[i]) + weight*float64(v)
		}
		checkTableScores(t, label+": model.onnx vs head + 10 x Gaussian", got, mixed, clf.Tables())
		var moved float64
		for i, v := range got {
			moved = max(moved, math.Abs(float64(v)-float64(headScores[i])))
		}
		t.Logf("%s: scores moved up to %.3g from the head's alone, %.0f x ONNX Runtime's largest difference from gauss", label, moved, moved/diff)
		if moved < 100*diff {
			t.Errorf("%s: scores within %.3g of the head's alone, ONNX Runtime's difference from gauss up to %.3g", label, moved, diff)
		}
	}
}

// checkTableScores compares the scores [n, K] of a graph of tables t with
// the reference want. The float32 graph computes ||W_c (zh - m_c)||^2 + b_c,
// where terms of the size of ||W_c m_c||^2 and |b_c| cancel (the softmax
// head's m_c = W_c/2 make them hundreds of times the score on this
// fixture's features), so each difference is taken relative to the largest
// of 1, |score|, ||W_c m_c||^2 and |b_c|; it must stay below 1e-5. It
// returns the largest absolute difference.
func checkTableScores(t *testing.T, label string, got []float32, want []float64, tables gauss.ClassifierTables) float64 {
	t.Helper()
	k, s := tables.K, tables.S
	scale := make([]float64, k)
	for c := range k {
		var wm float64
		for i := range s {
			var y float64
			for j := range s {
				y += float64(tables.Whiten[(c*s+i)*s+j]) * float64(tables.Means[c*s+j])
			}
			wm += y * y
		}
		scale[c] = max(1, wm, math.Abs(float64(tables.Bias[c])))
	}
	var worst, largest float64
	for i, w := range want {
		d := math.Abs(float64(got[i]) - w)
		worst = max(worst, d/max(scale[i%k], math.Abs(w)))
		largest = max(largest, d)
	}
	t.Logf("%s: max difference %.3g relative to the cancelled terms (bound 1e-5)", label, worst)
	if worst > 1e-5 {
		t.Errorf("%s: scores differ from the reference by %.3g relative to the cancelled terms", label, worst)
	}
	return largest
}
