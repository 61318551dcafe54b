package train

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/author"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/infer"
)

// TestClassifierCalibrationExport trains three tasks of a small quick run
// with every classifier calibration option on, exports it, and checks that
// ONNX Runtime through package infer gives the training-time evaluation's
// predictions on the real Fashion-MNIST test images; that the manifest
// carries the options and each class's age; that the options did change
// the classifier (its tables differ from the options-off ones); and that
// bicyc-infer add-classes rebuilds the old classes' tables unchanged. The
// same run checks the oracle-gap diagnostic (checkOracle).
func TestClassifierCalibrationExport(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST")
	}
	cfg := oneEpochConfig()
	cfg.Classifier.OffDiagShrink, cfg.Classifier.AgeShrink, cfg.Classifier.AgeBias = 1, 1, -0.5
	dir := t.TempDir()
	r := trainRun(t, cfg, dir, 3)
	ev, err := r.Evaluate(cfg.Classifier)
	if err != nil {
		t.Fatal(err)
	}
	model, b := exportBundle(t, dir)
	m := b.Manifest
	if o := m.Classifier; o.OffDiagShrink != 1 || o.AgeShrink != 1 || o.AgeBias != -0.5 {
		t.Errorf("manifest classifier %+v, want the run's calibration options", o)
	}
	var ages []int
	for _, c := range m.Classes {
		ages = append(ages, c.Age)
	}
	if want := []int{2, 2, 1, 1, 0, 0}; !slices.Equal(ages, want) {
		t.Errorf("class ages %v, want %v", ages, want)
	}
	offCfg := cfg.Classifier
	offCfg.OffDiagShrink, offCfg.AgeShrink, offCfg.AgeBias = 0, 0, 0
	seen := slices.Concat(r.Stream().Tasks[:3]...)
	saved := r.cfg.Classifier
	r.cfg.Classifier = offCfg
	off, err := r.classifier(seen, 2)
	r.cfg.Classifier = saved
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(off.Tables().Whiten, storedTables(t, b).Whiten) || slices.Equal(off.Tables().Bias, b.Prototypes.Bias) {
		t.Error("the exported tables equal the options-off classifier's")
	}

	clf, err := infer.Open(context.Background(), model, infer.WithLog(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer clf.Close()
	test := r.TestSet()
	imgs := make([]image.Image, len(ev.TestIndices))
	pred := map[int]int{}
	for i, j := range ev.TestIndices {
		imgs[i] = grayImage(test.Image(j), test.Width, test.Height)
		pred[i] = ev.Predictions[i]
	}
	checkModelAgreement(t, clf, imgs, pred)
	checkStudyFeatures(t, r)
	checkAddClassesKeepsOldTables(t, model, storedTables(t, b))
	checkPooledExport(t, r, imgs)
	checkTestFlipExport(t, r, imgs)
	checkSoftmaxHeadExport(t, r, imgs)
	checkGaussianWeightExport(t, r, imgs)
	checkOracle(t, r, ev)
}

// checkStudyFeatures: the features and prototypes a study reads
// (SplitFeatures, SeenPrototypes, after LoadTask) give, through
// gauss.NewClassifier with the run's options, exactly the predictions of
// EvaluateSplit on the validation split.
func checkStudyFeatures(t *testing.T, r *Run) {
	t.Helper()
	opts := r.Config().Classifier
	want, err := r.EvaluateSplit(opts, SplitVal)
	if err != nil {
		t.Fatal(err)
	}
	last := r.State().Completed
	if err := r.LoadTask(last); err != nil {
		t.Fatal(err)
	}
	z, labels, err := r.SplitFeatures(SplitVal, last, false)
	if err != nil {
		t.Fatal(err)
	}
	protos, ids, ages, err := r.SeenPrototypes(last)
	if err != nil {
		t.Fatal(err)
	}
	clf, err := gauss.NewClassifier(protos, nil, opts.WithAges(ages))
	if err != nil {
		t.Fatal(err)
	}
	got := clf.Predict(z, len(labels), nil)
	if len(got) != len(want.Predictions) {
		t.Fatalf("study features: %d images, EvaluateSplit %d", len(got), len(want.Predictions))
	}
	for i, p := range got {
		if ids[p] != want.Predictions[i] {
			t.Fatalf("study features: image %d predicted %d, EvaluateSplit %d", i, ids[p], want.Predictions[i])
		}
	}
}

// checkSoftmaxHeadExport re-exports the run with classifier.head softmax
// (reexport: the exported model gives the training-time predictions) and
// checks that the manifest names the head, that its tables are the softmax
// form (identity whitening) and that add-classes refits it over all
// classes, the old ones' tables changing too.
func checkSoftmaxHeadExport(t *testing.T, r *Run, imgs []image.Image) {
	t.Helper()
	clf, model := reexport(t, r, imgs, "head softmax", func(c *gauss.ClassifierOptions) { c.Head = gauss.HeadSoftmax })
	if got := clf.Manifest().Classifier.Head; got != gauss.HeadSoftmax {
		t.Errorf("manifest head %q, want %q", got, gauss.HeadSoftmax)
	}
	b, err := bundle.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	tables := storedTables(t, b)
	s := tables.S
	for c := range tables.K {
		for i := range s {
			for j := range s {
				want := float32(0)
				if i == j {
					want = 1
				}
				if got := tables.Whiten[c*s*s+i*s+j]; got != want {
					t.Fatalf("class %d: whitening [%d,%d] = %v, want the identity's %v", c, i, j, got, want)
				}
			}
		}
	}
	added, _ := addAnkleBoot(t, model)
	if got := storedTables(t, added); got.K != tables.K+1 || slices.Equal(got.Means[:tables.K*s], tables.Means) {
		t.Errorf("add-classes: %d classes, old means unchanged %v: want %d classes and the head refitted over all",
			got.K, slices.Equal(got.Means[:tables.K*s], tables.Means), tables.K+1)
	}
}

// checkGaussianWeightExport re-exports the run with the softmax head mixed
// with the Gaussian classifier (classifier.gaussian_weight 10; the run's
// off_diag_shrink and age_shrink act on the Gaussian part, its age bias on
// the head's): the exported model gives the training-time predictions
// (reexport), the manifest records the weight, and the calibrated unknown
// score, fitted on the mixture's scores, is finite on every test image and
// accepts about the requested share of them (within 0.1).
func checkGaussianWeightExport(t *testing.T, r *Run, imgs []image.Image) {
	t.Helper()
	clf, _ := reexport(t, r, imgs, "gaussian_weight 10", func(c *gauss.ClassifierOptions) {
		c.Head, c.GaussianWeight = gauss.HeadSoftmax, 10
	})
	m := clf.Manifest()
	if m.Classifier.GaussianWeight != 10 || m.Calibration == nil {
		t.Fatalf("manifest gaussian_weight %g, calibration %v: want 10 and a calibration", m.Classifier.GaussianWeight, m.Calibration != nil)
	}
	res, err := clf.ClassifyBatch(context.Background(), imgs)
	if err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for i, out := range res {
		if math.IsNaN(out.UnknownScore) || math.IsInf(out.UnknownScore, 0) {
			t.Fatalf("image %d: unknown score %v (%s)", i, out.UnknownScore, out.UnknownScoreName)
		}
		if !out.Unknown {
			accepted++
		}
	}
	rate := float64(accepted) / float64(len(res))
	t.Logf("gaussian_weight 10: %s accepts %.3f of %d known-class test images at accept_rate %.2f", res[0].UnknownScoreName, rate, len(res), m.Calibration.AcceptRate)
	// Measured 0.912 at 0.95 (the threshold comes from the quick run's
	// few validation images): 0.1 leaves a margin of 2.6 times that.
	if math.Abs(rate-m.Calibration.AcceptRate) > 0.1 {
		t.Errorf("gaussian_weight 10: accepted %.3f of known-class test images, asked %.2f", rate, m.Calibration.AcceptRate)
	}
}

// checkTestFlipExport exports the run with classifier.test_flip on and
// checks that an image and its mirror then get the same predictions at the
// same distances (the mean of the two scores is symmetric) and that
// add-classes mirrors the new class's images. Switched on by hand in
// config.yaml, the export is refused: the checkpoints' held-out features
// have no mirrors; the run evaluated again under it (Rescore, as a sweep
// does) exports.
func checkTestFlipExport(t *testing.T, r *Run, imgs []image.Image) {
	t.Helper()
	cfg := r.Config()
	cfg.Classifier.TestFlip = true
	path := filepath.Join(r.Dir(), "config.yaml")
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeConfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	err = Export(r.Dir(), filepath.Join(t.TempDir(), "model"), 0)
	if err == nil || !strings.Contains(err.Error(), "classifier.test_flip is true") || !strings.Contains(err.Error(), "train.Rescore") {
		t.Errorf("export with test_flip switched on by hand: error %v, want one naming test_flip and train.Rescore", err)
	}
	if err := os.WriteFile(path, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	flipped, err := Rescore(r.Dir(), cfg, t.TempDir(), Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer flipped.Close()
	ev, err := flipped.Evaluate(cfg.Classifier)
	if err != nil {
		t.Fatal(err)
	}
	clf, model := exportAgrees(t, flipped.Dir(), ev, imgs)
	if !clf.Manifest().Classifier.TestFlip {
		t.Error("manifest test_flip is off")
	}
	a, err := clf.ClassifyBatch(context.Background(), imgs[:20])
	if err != nil {
		t.Fatal(err)
	}
	b, err := clf.ClassifyBatch(context.Background(), mirrorImages(imgs[:20]))
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if !slices.Equal(a[i].Predictions, b[i].Predictions) {
			t.Fatalf("image %d: %v, its mirror %v: want the same with test_flip", i, a[i].Predictions, b[i].Predictions)
		}
	}
	checkAddClassesMirrors(t, clf, model)
}

// checkAddClassesMirrors adds a class to the test-time-flip model and
// checks that its stored mean is that of its images' and their mirrors'
// features, as training's statistics of a mirrored class are.
func checkAddClassesMirrors(t *testing.T, clf *infer.Classifier, model string) {
	t.Helper()
	added, imgs := addAnkleBoot(t, model)
	z, err := clf.Embed(context.Background(), append(slices.Clone(imgs), mirrorImages(imgs)...))
	if err != nil {
		t.Fatal(err)
	}
	p := added.Prototypes
	got := p.Means[(p.K-1)*p.S:]
	for j := range p.S {
		var mean float64
		for _, row := range z {
			mean += float64(row[j])
		}
		mean /= float64(len(z))
		if math.Abs(float64(got[j])-mean) > 1e-4*(1+math.Abs(mean)) {
			t.Fatalf("added class mean[%d] = %v, want %v, the mean over the images and their mirrors", j, got[j], mean)
		}
	}
}

// oneEpochConfig is the quick bicyc profile at 60 training and 40 test
// images per class and one epoch per stage: a run of a few seconds.
func oneEpochConfig() config.Config {
	cfg := quickConfig(config.MethodBicyc, 0)
	cfg.Data.TrainPerClass, cfg.Data.TestPerClass = 60, 40
	cfg.Train.EpochsFirst, cfg.Train.Epochs, cfg.Adapter.Epochs = 1, 1, 1
	return cfg
}

// checkPooledExport re-exports the run with classifier.pool_cov on as
// well (pooling changes every class's table when classes are added, so it
// is checked apart from add-classes; see reexport).
func checkPooledExport(t *testing.T, r *Run, imgs []image.Image) {
	t.Helper()
	clf, _ := reexport(t, r, imgs, "pool_cov 0.5", func(c *gauss.ClassifierOptions) { c.PoolCov = 0.5 })
	if got := clf.Manifest().Classifier.PoolCov; got != 0.5 {
		t.Errorf("manifest pool_cov %v, want 0.5", got)
	}
}

// reexport changes the run's classifier options with edit (in its
// config.yaml; what names the change in messages), checks that the change
// alters some training-time prediction, exports the run, and checks that ONNX
// Runtime through package infer gives the training-time evaluation's
// predictions on imgs. It returns the opened model and its directory.
func reexport(t *testing.T, r *Run, imgs []image.Image, what string, edit func(*gauss.ClassifierOptions)) (*infer.Classifier, string) {
	t.Helper()
	cfg := r.Config()
	base, err := r.Evaluate(cfg.Classifier)
	if err != nil {
		t.Fatal(err)
	}
	edit(&cfg.Classifier)
	if err := writeConfig(filepath.Join(r.Dir(), "config.yaml"), cfg); err != nil {
		t.Fatal(err)
	}
	ev, err := r.Evaluate(cfg.Classifier)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(base.Predictions, ev.Predictions) {
		t.Errorf("%s changed no prediction of %d", what, len(ev.Predictions))
	}
	return exportAgrees(t, r.Dir(), ev, imgs)
}

// exportAgrees exports the run in dir and checks that ONNX Runtime through
// package infer gives the evaluation ev's predictions on imgs. It returns
// the opened model and its directory.
func exportAgrees(t *testing.T, dir string, ev Evaluation, imgs []image.Image) (*infer.Classifier, string) {
	t.Helper()
	model := filepath.Join(t.TempDir(), "model")
	if err := Export(dir, model, 0); err != nil {
		t.Fatal(err)
	}
	clf, err := infer.Open(context.Background(), model, infer.WithLog(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { clf.Close() })
	pred := map[int]int{}
	for i, p := range ev.Predictions {
		pred[i] = p
	}
	checkModelAgreement(t, clf, imgs, pred)
	return clf, model
}

// checkOracle runs the oracle-gap diagnostic on r after its third task:
// it covers the 4 classes of tasks 1 and 2, each with a finite positive
// mean shift; the oracle-means prototypes keep the stored covariances;
// and evaluating with them leaves the run's own evaluation (ev) unchanged
// afterwards.
func checkOracle(t *testing.T, r *Run, ev Evaluation) {
	t.Helper()
	oracle, classes, err := r.OraclePrototypes()
	if err != nil {
		t.Fatal(err)
	}
	if len(oracle) != 4 || len(classes) != 4 {
		t.Fatalf("oracle of %d classes (%d reported), want the 4 of tasks 1-2", len(oracle), len(classes))
	}
	for _, o := range classes {
		if !(o.Relative() > 0) || math.IsInf(o.Relative(), 0) || o.Task > 2 {
			t.Errorf("class %d (task %d): mean shift %v over spread %v", o.ID, o.Task, o.MeanShift, o.Spread)
		}
	}
	means := r.WithOracle(oracle, false)
	for c, g := range oracle {
		if means[c].Cov != r.State().Prototypes[c].Cov || !slices.Equal(means[c].Mean, g.Mean) {
			t.Errorf("class %d: oracle means changed the covariance or kept the stored mean", c)
		}
	}
	if _, err := r.EvaluatePrototypes(r.Config().Classifier, SplitTest, r.WithOracle(oracle, true)); err != nil {
		t.Fatal(err)
	}
	again, err := r.Evaluate(r.Config().Classifier)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Predictions, ev.Predictions) {
		t.Error("evaluating with oracle prototypes changed the run's own predictions")
	}
	tc := r.Confusion(ev, SplitTest)
	if tc.Images != len(ev.Predictions) || tc.SameTask+tc.ToOlder+tc.ToNewer != tc.Errors {
		t.Errorf("confusion %+v does not add up over %d predictions", tc, len(ev.Predictions))
	}
}

// storedTables rebuilds the classifier tables of a model directory from its
// stored prototypes and bias with the manifest's classifier options, as
// add-classes does: the factored tables are no longer stored, only the
// expanded form in classifier.data.
func storedTables(t *testing.T, b *bundle.Bundle) gauss.ClassifierTables {
	t.Helper()
	clf, err := gauss.NewClassifier(b.Prototypes.Gaussians(), nil, b.Manifest.Classifier.WithAges(bundle.Ages(b.Manifest.Classes)))
	if err != nil {
		t.Fatal(err)
	}
	tables := clf.Tables()
	tables.Bias = b.Prototypes.Bias
	return tables
}

// checkAddClassesKeepsOldTables adds an unseen class (Ankle boot) from a
// few test images and checks that the old classes' whitening and bias come
// out as exported: their ages, not the longer task list, set their
// shrinkage and bias.
func checkAddClassesKeepsOldTables(t *testing.T, model string, old gauss.ClassifierTables) {
	t.Helper()
	added, _ := addAnkleBoot(t, model)
	got := storedTables(t, added)
	k, ss := old.K, old.S*old.S
	if !slices.Equal(got.Whiten[:k*ss], old.Whiten) || !slices.Equal(got.Bias[:k], old.Bias) {
		t.Error("add-classes changed the old classes' whitening or bias")
	}
}

// addAnkleBoot runs add-classes on model with 8 Fashion-MNIST test images
// of Ankle boot, a class the tests' runs never train, written as PNG files;
// it returns the new model and the images.
func addAnkleBoot(t *testing.T, model string) (*bundle.Bundle, []image.Image) {
	t.Helper()
	_, test, err := data.LoadFashionMNIST("")
	if err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(t.TempDir(), "Ankle boot")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	var files []string
	var imgs []image.Image
	for _, j := range test.Subset([]int{9})[:8] {
		path := filepath.Join(folder, fmt.Sprintf("%05d.png", j))
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		img := grayImage(test.Image(j), test.Width, test.Height)
		if err := png.Encode(f, img); err != nil {
			t.Fatal(err)
		}
		f.Close()
		files = append(files, path)
		imgs = append(imgs, img)
	}
	out := filepath.Join(t.TempDir(), "added")
	if _, err := author.AddClasses(context.Background(), model, out, []author.LabelledImages{{Name: "Ankle boot", Files: files}}, infer.WithLog(io.Discard)); err != nil {
		t.Fatal(err)
	}
	added, err := bundle.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	return added, imgs
}

// mirrorImages returns the horizontal mirrors of grayscale images.
func mirrorImages(imgs []image.Image) []image.Image {
	out := make([]image.Image, len(imgs))
	for i, img := range imgs {
		g := img.(*image.Gray)
		pix := slices.Clone(g.Pix)
		imaging.FlipHorizontal(pix, pix, 1, g.Rect.Dy(), g.Rect.Dx())
		out[i] = grayImage(pix, g.Rect.Dx(), g.Rect.Dy())
	}
	return out
}

func grayImage(pix []uint8, w, h int) image.Image {
	g := image.NewGray(image.Rect(0, 0, w, h))
	copy(g.Pix, pix)
	return g
}
