package train

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/rundir"
)

// TestExportMatchesTraining trains all of Fashion-MNIST in two tasks (quick
// profile, full test set), exports it, and checks the export against the
// trainer: ONNX Runtime's backbone features against gorgonia's, model.onnx's
// predictions on all 10000 test images against the training-time
// evaluation, and the same images written as PNG files and classified by
// the bicyc-infer command.
func TestExportMatchesTraining(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST")
	}
	cfg := quickConfig(config.MethodBicyc, 0)
	cfg.Stream.Tasks = 2
	cfg.Data.TestPerClass = 0
	dir := t.TempDir()
	r := trainRun(t, cfg, dir, 0)
	ev, err := r.Evaluate(cfg.Classifier)
	if err != nil {
		t.Fatal(err)
	}
	test := r.TestSet()
	if len(ev.Predictions) != test.Len() {
		t.Fatalf("evaluated %d of %d test images", len(ev.Predictions), test.Len())
	}
	// A kill between checkpoint and metrics leaves metrics.json behind; the
	// export must describe the checkpoint it ships.
	if err := os.WriteFile(filepath.Join(dir, "metrics.json"), []byte(`{"completed_tasks": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	model, b := exportBundle(t, dir)
	if p := b.Manifest.Preprocess; p.ResizeMode != arch.Squash || p.ResizeShorter != 0 {
		t.Errorf("Fashion-MNIST manifest preprocessing %+v, want squash stated explicitly", p)
	}
	var shipped rundir.Summary
	if err := json.Unmarshal(b.Manifest.Metrics, &shipped); err != nil {
		t.Fatal(err)
	}
	if sum := summary(t, r); shipped.Completed != 2 || shipped.TAg.ALast != sum.TAg.ALast {
		t.Errorf("manifest metrics: %d tasks, A_last %v; the checkpoint has 2 tasks, A_last %v", shipped.Completed, shipped.TAg.ALast, sum.TAg.ALast)
	}
	clf, err := infer.Open(context.Background(), model, infer.WithLog(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer clf.Close()

	imgs := make([]image.Image, test.Len())
	for i := range imgs {
		g := image.NewGray(image.Rect(0, 0, test.Width, test.Height))
		copy(g.Pix, test.Image(i))
		imgs[i] = g
	}

	checkBackboneParity(t, r, clf, imgs)
	// model.onnx on the whole test set, against the training-time evaluation.
	pred := map[int]int{}
	for i, j := range ev.TestIndices {
		pred[j] = ev.Predictions[i]
	}
	accepted := checkModelAgreement(t, clf, imgs, pred)
	checkCalibration(t, b.Manifest.Calibration, cfg, accepted, len(imgs))
	checkInferCommand(t, model, imgs, pred)
}

// checkBackboneParity compares ONNX Runtime's backbone features of 256 of
// the test images with gorgonia's.
func checkBackboneParity(t *testing.T, r *Run, clf *infer.Classifier, imgs []image.Image) {
	t.Helper()
	test := r.TestSet()
	const n = 256
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i * (test.Len() / n)
	}
	want, err := features(r.State().Backbone, test, idx, r.Preprocess(), 128, false)
	if err != nil {
		t.Fatal(err)
	}
	batch := make([]image.Image, n)
	for i, j := range idx {
		batch[i] = imgs[j]
	}
	got, err := clf.Embed(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	s := r.State().Backbone.FeatureDim()
	var worst float64
	for i := range got {
		for k := range got[i] {
			worst = max(worst, abs(float64(got[i][k]-want[i*s+k])))
		}
	}
	t.Logf("backbone: max |ONNX Runtime - gorgonia| = %.2g over %d images", worst, n)
	if worst > 1e-4 {
		t.Errorf("backbone features differ by %g, want <= 1e-4", worst)
	}

}

// checkModelAgreement classifies imgs with model.onnx, checks that its
// best class agrees with the training-time prediction pred (by test index)
// on at least 99.9% of them, and returns how many it accepted as known.
func checkModelAgreement(t *testing.T, clf *infer.Classifier, imgs []image.Image, pred map[int]int) (accepted int) {
	t.Helper()
	agree := 0
	for start := 0; start < len(imgs); start += 500 {
		res, err := clf.ClassifyBatch(context.Background(), imgs[start:min(start+500, len(imgs))])
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Predictions[0].ClassID == pred[start+i] {
				agree++
			}
			if !r.Unknown {
				accepted++
			}
		}
	}
	rate := float64(agree) / float64(len(imgs))
	t.Logf("model.onnx agrees with the training-time evaluation on %d of %d test images (%.3f%%)", agree, len(imgs), 100*rate)
	if rate < 0.999 {
		t.Errorf("agreement %.4f, want >= 0.999", rate)
	}
	return accepted
}

// checkCalibration checks that the model was calibrated on the validation
// split and accepts the requested share (within 2 points) of the unseen,
// known-class test images, of which it accepted accepted of n.
func checkCalibration(t *testing.T, cal *bundle.Calibration, cfg config.Config, accepted, n int) {
	t.Helper()
	if cal == nil || cal.HeldOutImages != 10*ValidationCount(cfg.Data.ValPerClass, cfg.Data.TrainPerClass) {
		t.Fatalf("calibration %+v, want one fitted on the validation split", cal)
	}
	acceptRate := float64(accepted) / float64(n)
	t.Logf("calibrated on %d validation images: accepts %.3f of the test images at accept_rate %.2f (temperature %.3g)",
		cal.HeldOutImages, acceptRate, cal.AcceptRate, cal.Temperature)
	if abs(acceptRate-cfg.Export.AcceptRate) > 0.02 {
		t.Errorf("accepted %.3f of known-class test images, asked %.2f", acceptRate, cfg.Export.AcceptRate)
	}
}

// checkInferCommand writes imgs as PNG files, classifies them with the
// bicyc-infer command and checks its agreement with pred as
// checkModelAgreement does.
func checkInferCommand(t *testing.T, model string, imgs []image.Image, pred map[int]int) {
	t.Helper()
	pngDir := t.TempDir()
	for i, img := range imgs {
		f, err := os.Create(filepath.Join(pngDir, fmt.Sprintf("%05d.png", i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := png.Encode(f, img); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	agree, lines := 0, 0
	for file, class := range runInferCommand(t, model, pngDir) {
		var i int
		if _, err := fmt.Sscanf(strings.TrimSuffix(filepath.Base(file), ".png"), "%d", &i); err != nil {
			t.Fatalf("file %q: %v", file, err)
		}
		lines++
		if class == pred[i] {
			agree++
		}
	}
	rate := float64(agree) / float64(len(imgs))
	t.Logf("bicyc-infer on %d PNG files agrees on %d (%.3f%%)", lines, agree, 100*rate)
	if lines != len(imgs) || rate < 0.999 {
		t.Errorf("bicyc-infer classified %d files, agreement %.4f, want %d and >= 0.999", lines, rate, len(imgs))
	}
}

func abs(v float64) float64 { return max(v, -v) }
