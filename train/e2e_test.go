package train

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/rundir"
)

// quickConfig is the quick profile on the real Fashion-MNIST files.
func quickConfig(method config.Method, seed int64) config.Config {
	c := config.Default()
	c.Quick = true
	c.Method = method
	c.Seed = seed
	return c.Resolved()
}

// trainRun trains cfg in a fresh run directory until stopAfter tasks are
// complete and returns the run.
func trainRun(t *testing.T, cfg config.Config, dir string, stopAfter int) *Run {
	t.Helper()
	r, err := New(cfg, dir, Options{Log: io.Discard, StopAfter: stopAfter})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r
}

func summary(t *testing.T, r *Run) rundir.Summary {
	t.Helper()
	s, err := r.Summary()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTwoTasksBicycVersusFinetune trains two tasks of the quick profile and
// checks that bicyc keeps task 1 far above chance (4 seen classes: 25%)
// while finetune, which neither distils nor transports, forgets it.
func TestTwoTasksBicycVersusFinetune(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST")
	}
	acc := map[config.Method]float64{}
	runs := map[config.Method]rundir.Summary{}
	var bicycDir string
	for _, method := range []config.Method{config.MethodBicyc, config.MethodFinetune} {
		r := trainRun(t, quickConfig(method, 0), t.TempDir(), 2)
		s := summary(t, r)
		runs[method] = s
		if method == config.MethodBicyc {
			bicycDir = r.Dir()
		}
		if s.Completed != 2 {
			t.Fatalf("%s: %d tasks completed, want 2", method, s.Completed)
		}
		acc[method] = s.MatrixTAg.At(1, 0)
		t.Logf("%s: task-1 TAg accuracy after task 2: %.1f%% (task 2: %.1f%%)", method, 100*acc[method], 100*s.MatrixTAg.At(1, 1))
		if a := s.MatrixTAg.At(1, 1); a < 0.6 {
			t.Errorf("%s: task 2 TAg accuracy %.3f: the new task was not learned", method, a)
		}
	}
	if acc[config.MethodBicyc] < 0.35 {
		t.Errorf("bicyc: task-1 accuracy after task 2 is %.3f, want far above chance (0.25)", acc[config.MethodBicyc])
	}
	if acc[config.MethodBicyc]-acc[config.MethodFinetune] < 0.15 {
		t.Errorf("finetune keeps task 1 at %.3f, bicyc at %.3f: want finetune clearly lower", acc[config.MethodFinetune], acc[config.MethodBicyc])
	}

	// Task 1 is the same for every method: finetune forked from the bicyc
	// run after task 1 must give what finetune from scratch gave.
	forked, err := Fork(bicycDir, quickConfig(config.MethodFinetune, 0), t.TempDir(), Options{Log: io.Discard, StopAfter: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer forked.Close()
	if err := forked.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	fs := summary(t, forked)
	for step := 0; step < 2; step++ {
		for u := 0; u <= step; u++ {
			if a, b := runs[config.MethodFinetune].MatrixTAg.At(step, u), fs.MatrixTAg.At(step, u); a != b {
				t.Errorf("finetune acc[%d][%d]: %v from scratch, %v forked from bicyc's task 1", step, u, a, b)
			}
		}
	}
	if fs.Method != config.MethodFinetune || fs.Completed != 2 || fs.Reports[0].TrainedIn != bicycDir || fs.Reports[1].TrainedIn != "" {
		t.Errorf("forked run: method %q, %d tasks completed, tasks trained in %q, %q",
			fs.Method, fs.Completed, fs.Reports[0].TrainedIn, fs.Reports[1].TrainedIn)
	}
	for _, rep := range fs.Reports {
		if rep.Build == "" || rep.Build != trainingBuild() {
			t.Errorf("forked run: task %d says it was trained by build %q, this build is %q", rep.Task, rep.Build, trainingBuild())
		}
	}

	checkForkNewClassifier(t, bicycDir, runs[config.MethodBicyc])

	other := quickConfig(config.MethodFinetune, 1)
	other.Loss.Alpha = 0.5
	_, err = Fork(bicycDir, other, t.TempDir(), Options{Log: io.Discard})
	if !errors.Is(err, ErrForkMismatch) || !strings.Contains(err.Error(), "seed, loss.alpha") {
		t.Errorf("fork with another seed and loss.alpha: got %v, want ErrForkMismatch naming seed, loss.alpha", err)
	}
}

// checkForkNewClassifier: a fork with another classifier shares task 1 and
// records task 1's accuracies under its own classifier, the ones Evaluate
// gives it, not the source's.
func checkForkNewClassifier(t *testing.T, src string, srcSummary rundir.Summary) {
	t.Helper()
	cfg := quickConfig(config.MethodBicyc, 0)
	cfg.Classifier.Shrink, cfg.Classifier.Normalize = 0.01, false
	forked, err := Fork(src, cfg, t.TempDir(), Options{Log: io.Discard})
	if err != nil {
		t.Fatalf("fork with another classifier: %v", err)
	}
	defer forked.Close()
	got := summary(t, forked).Reports[0]
	want, err := forked.Evaluate(cfg.Classifier)
	if err != nil {
		t.Fatal(err)
	}
	wantVal, err := forked.EvaluateSplit(cfg.Classifier, SplitVal)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.TAg, want.TAg) || !slices.Equal(got.TAw, want.TAw) || !slices.Equal(got.ValTAg, wantVal.TAg) {
		t.Errorf("forked task 1: TAg %v TAw %v val %v, its classifier gives %v %v %v", got.TAg, got.TAw, got.ValTAg, want.TAg, want.TAw, wantVal.TAg)
	}
	source := srcSummary.Reports[0]
	if slices.Equal(got.TAg, source.TAg) && slices.Equal(got.ValTAg, source.ValTAg) {
		t.Errorf("task 1 scores %v / val %v under both classifiers: the test cannot tell a re-evaluation", got.TAg, got.ValTAg)
	}
}

// TestSeedsAndResume checks that the same seed gives the same metrics even
// across a resume after task 1, and that another seed changes the
// class-independent randomness.
func TestSeedsAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST")
	}
	cfg := quickConfig(config.MethodBicyc, 0)
	cfg.Stream.Tasks = 5
	whole := summary(t, trainRun(t, cfg, t.TempDir(), 2))

	dir := t.TempDir()
	trainRun(t, cfg, dir, 1)
	r, err := Resume(dir, Options{Log: io.Discard, StopAfter: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	resumed := summary(t, r)
	for step := 0; step < 2; step++ {
		for u := 0; u <= step; u++ {
			if a, b := whole.MatrixTAg.At(step, u), resumed.MatrixTAg.At(step, u); a != b {
				t.Errorf("acc[%d][%d]: %v uninterrupted, %v resumed", step, u, a, b)
			}
		}
	}
	for name, v := range whole.Reports[1].Losses {
		if resumed.Reports[1].Losses[name] != v {
			t.Errorf("task 2 loss %s: %v uninterrupted, %v resumed", name, v, resumed.Reports[1].Losses[name])
		}
	}

	other := quickConfig(config.MethodBicyc, 1)
	s1 := summary(t, trainRun(t, other, t.TempDir(), 1))
	if s1.Reports[0].Losses["ce"] == whole.Reports[0].Losses["ce"] {
		t.Errorf("seeds 0 and 1 gave the same task-1 loss %v", s1.Reports[0].Losses["ce"])
	}
	if st, _ := os.ReadFile(filepath.Join(r.Dir(), "stream.json")); !strings.Contains(string(st), `"tasks"`) {
		t.Error("stream.json does not record the task stream")
	}
}

// TestNaNStopsAndKeepsCheckpoint makes task 2 diverge and checks that the
// run stops with a message naming the loss, and that the checkpoint of
// task 1 is intact and still the latest.
func TestNaNStopsAndKeepsCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST")
	}
	cfg := quickConfig(config.MethodBicyc, 0)
	cfg.Train.Rotation = false
	dir := t.TempDir()
	r := trainRun(t, cfg, dir, 1)
	r.cfg.Train.LR = 1e30
	r.cfg.Train.ClipNorm = 0
	r.stopAfter = 0
	err := r.Execute(context.Background())
	if err == nil || !strings.Contains(err.Error(), "task 2") || !(strings.Contains(err.Error(), "NaN") || strings.Contains(err.Error(), "Inf")) {
		t.Fatalf("diverging task 2: error %v, want one naming task 2 and the non-finite loss", err)
	}
	latest, _ := os.ReadFile(filepath.Join(dir, "checkpoints", "latest"))
	if strings.TrimSpace(string(latest)) != "task-01" {
		t.Errorf("latest checkpoint is %q, want task-01", latest)
	}
	st, err := LoadCheckpoint(filepath.Join(dir, "checkpoints", "task-01"), cfg)
	if err != nil || st.Completed != 1 {
		t.Fatalf("task-1 checkpoint after the failure: %v", err)
	}
}

// TestLearnNewClasses finishes a two-task run on Fashion-MNIST and teaches
// it two new classes from image folders (inverted Fashion-MNIST images of
// two classes, written as PNG), then exports the 12-class model.
func TestLearnNewClasses(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST")
	}
	cfg := quickConfig(config.MethodBicyc, 0)
	cfg.Stream.Tasks = 2
	cfg.Data.TrainPerClass, cfg.Data.TestPerClass = 150, 50
	cfg.Train.Rotation = false
	dir := t.TempDir()
	trainRun(t, cfg, dir, 0)

	train, test, err := data.LoadFashionMNIST(data.FashionMNISTDir)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	writeInverted(t, train, filepath.Join(root, "train"), map[int]string{8: "negative-bag", 9: "negative-boot"}, 200)
	writeInverted(t, test, filepath.Join(root, "test"), map[int]string{8: "negative-bag", 9: "negative-boot"}, 60)

	r, err := Resume(dir, Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Learn(context.Background(), filepath.Join(root, "train"), filepath.Join(root, "test"), LearnOptions{}); err != nil {
		t.Fatal(err)
	}
	s := summary(t, r)
	if s.Completed != 3 || len(r.Stream().Tasks[2]) != 2 || r.Stream().Tasks[2][0] != 10 {
		t.Fatalf("after learn: %d tasks completed, stream %v", s.Completed, r.Stream().Tasks)
	}
	if a := s.MatrixTAg.At(2, 2); a < 0.5 {
		t.Errorf("new classes: TAg accuracy %.3f", a)
	}
	t.Logf("after learning: TAg %v", s.Reports[2].TAg)
	model := filepath.Join(t.TempDir(), "model")
	if err := Export(dir, model, 0); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	m := b.Manifest
	if len(m.Classes) != 12 || m.Classes[11].Name != "negative-boot" || m.Classes[11].Task != 3 {
		t.Errorf("exported classes: %+v", m.Classes[10:])
	}

	// A resumed run reloads the learned task's images.
	again, err := Resume(dir, Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	ev, err := again.Evaluate(cfg.Classifier)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(ev.TAg[2]-s.MatrixTAg.At(2, 2)) > 1e-12 {
		t.Errorf("re-evaluated new-task accuracy %v, at training %v", ev.TAg[2], s.MatrixTAg.At(2, 2))
	}
}

// writeInverted writes up to n images of each given class of ds, inverted,
// as PNG files in dir/<name>/.
func writeInverted(t *testing.T, ds *data.Dataset, dir string, classes map[int]string, n int) {
	t.Helper()
	count := map[int]int{}
	for i, l := range ds.Labels {
		name, ok := classes[l]
		if !ok || count[l] >= n {
			continue
		}
		count[l]++
		img := image.NewGray(image.Rect(0, 0, ds.Width, ds.Height))
		for j, p := range ds.Image(i) {
			img.SetGray(j%ds.Width, j/ds.Width, color.Gray{Y: 255 - p})
		}
		sub := filepath.Join(dir, name)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(sub, fmt.Sprintf("%06d.png", i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := png.Encode(f, img); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

// TestRotationSplitBatch: with train.rotation_split_batch a rotated step
// takes batch_size/4 images, so task 1 makes four times the steps over the
// same images (AdaGauss's public code) and ends elsewhere.
func TestRotationSplitBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST")
	}
	cfg := quickConfig(config.MethodBicyc, 0)
	cfg.Train.Rotation = true
	cfg.Train.EpochsFirst = 1
	cfg.Data.TrainPerClass, cfg.Data.TestPerClass = 256, 100
	ce := map[bool]float64{}
	for _, split := range []bool{false, true} {
		cfg.Train.RotationSplitBatch = split
		r, err := New(cfg, t.TempDir(), Options{Log: io.Discard, StopAfter: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Execute(context.Background()); err != nil {
			t.Fatal(err)
		}
		r.Close()
		s := summary(t, r)
		ce[split] = s.Reports[0].Losses["ce"]
		if a := s.MatrixTAg.At(0, 0); a < 0.6 {
			t.Errorf("split %v: task-1 accuracy %.3f", split, a)
		}
	}
	if ce[false] == ce[true] {
		t.Errorf("rotation_split_batch changed nothing: task-1 CE %v both ways", ce[false])
	}
	t.Logf("task-1 CE after one epoch: %.4f with 4x the steps, %.4f without", ce[true], ce[false])
}
