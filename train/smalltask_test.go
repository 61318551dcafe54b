package train

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/gauss"
)

func TestValidationCount(t *testing.T) {
	for i, c := range []struct{ perClass, n, want int }{
		{-1, 6000, 600}, {-1, 100, 10}, {-1, 30, 3}, {-1, 9, 0},
		{0, 6000, 0},
		{50, 6000, 50}, {50, 60, 30}, {5, 1, 0},
	} {
		if got := ValidationCount(c.perClass, c.n); got != c.want {
			t.Errorf("case %d: ValidationCount(%d, %d) = %d, want %d", i, c.perClass, c.n, got, c.want)
		}
	}
}

func TestEpochsForSteps(t *testing.T) {
	for i, c := range []struct{ epochs, perEpoch, minSteps, want int }{
		{3, 84, 200, 3},  // full data: the floor does not bind
		{3, 1, 200, 200}, // 100 images per class: one step per epoch
		{3, 7, 200, 29},
		{3, 1, 0, 3}, // floor off: the authors' epochs
		{3, 0, 200, 3},
	} {
		if got := epochsForSteps(c.epochs, c.perEpoch, c.minSteps); got != c.want {
			t.Errorf("case %d: epochsForSteps(%d, %d, %d) = %d, want %d", i, c.epochs, c.perEpoch, c.minSteps, got, c.want)
		}
	}
}

// TestValidationSplit checks on Fashion-MNIST that the validation images
// are disjoint from the trained ones, have the configured size per class,
// are the same for a run of the same seed and differ for another seed.
func TestValidationSplit(t *testing.T) {
	cfg := quickConfig("bicyc", 0)
	cfg.Data.TrainPerClass, cfg.Data.ValPerClass = 100, -1
	split := func(seed int64) (train, val []int) {
		c := cfg
		c.Seed = seed
		r := &Run{cfg: c}
		var err error
		if r.train, _, err = data.LoadFashionMNIST(c.Data.Dir); err != nil {
			t.Fatal(err)
		}
		return r.trainIndices([]int{3, 7}), r.valIndices([]int{3, 7})
	}
	train, val := split(0)
	if len(train) != 180 || len(val) != 20 {
		t.Fatalf("split of 2 classes x 100 images: %d trained, %d held out; want 180 and 20", len(train), len(val))
	}
	for _, i := range val {
		if slices.Contains(train, i) {
			t.Fatalf("image %d is both trained on and held out", i)
		}
	}
	if _, again := split(0); !slices.Equal(again, val) {
		t.Error("the same seed held out other images")
	}
	if _, other := split(1); slices.Equal(other, val) {
		t.Error("another seed held out the same images")
	}
}

// TestLearnRefusesBadNewClasses: a class named like an old one, or with
// fewer than MinLearnImages images, and a changed first-task key are
// refused with errors that say why; the run is left as it was.
func TestLearnRefusesBadNewClasses(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST")
	}
	cfg := quickConfig("finetune", 0)
	cfg.Stream.Tasks = 5
	cfg.Data.TrainPerClass, cfg.Data.TestPerClass = 40, 20
	cfg.Train.MinSteps, cfg.Adapter.MinSteps = 0, 0
	dir := t.TempDir()
	trainRun(t, cfg, dir, 1)
	ds, _, err := data.LoadFashionMNIST(cfg.Data.Dir)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	writeInverted(t, ds, filepath.Join(root, "dup", "train"), map[int]string{8: "Bag", 9: "negative-boot"}, 20)
	writeInverted(t, ds, filepath.Join(root, "dup", "test"), map[int]string{8: "Bag", 9: "negative-boot"}, 5)
	writeInverted(t, ds, filepath.Join(root, "alike", "train"), map[int]string{8: "bag", 9: "negative-boot"}, 20)
	writeInverted(t, ds, filepath.Join(root, "alike", "test"), map[int]string{8: "bag", 9: "negative-boot"}, 5)
	writeInverted(t, ds, filepath.Join(root, "few", "train"), map[int]string{8: "negative-bag", 9: "negative-boot"}, 1)
	writeInverted(t, ds, filepath.Join(root, "few", "test"), map[int]string{8: "negative-bag", 9: "negative-boot"}, 5)
	r, err := Resume(dir, Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.stream.Tasks = r.stream.Tasks[:1] // learn after task 1 of 5: a finished one-task run
	changed := cfg
	changed.Seed = 7
	for i, c := range []struct {
		dir  string
		opts LearnOptions
		want string
	}{
		{"dup", LearnOptions{}, `class name "Bag": class names that look alike: it is "Bag", an existing class (LearnOptions.AllowDuplicateNames`},
		{"alike", LearnOptions{}, `class name "bag": class names that look alike: it is "Bag", an existing class up to letter case or Unicode form (LearnOptions.AllowDuplicateNames`},
		{"few", LearnOptions{}, `has 1 training images, need at least 2`},
		{"few", LearnOptions{AllowDuplicateNames: true}, `need at least 2`},
		{"dup", LearnOptions{Config: &changed}, "seed"},
	} {
		err := r.Learn(context.Background(), filepath.Join(root, c.dir, "train"), filepath.Join(root, c.dir, "test"), c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: error %v, want one containing %q", i, err, c.want)
		}
		if i == 4 && !errors.Is(err, ErrForkMismatch) {
			t.Errorf("case %d: error %v does not wrap ErrForkMismatch", i, err)
		}
	}
	if len(r.Stream().Tasks) != 1 || r.State().Completed != 1 {
		t.Errorf("after refused learns: stream %v, %d completed", r.Stream().Tasks, r.State().Completed)
	}
}

// TestLearnSmallTaskKeepsOldClasses teaches a finished run two new classes
// (inverted Fashion-MNIST bags and boots) from 10 and from 30 images per
// class with the default learn settings, and checks that the old classes'
// TAg accuracy (over all old test images) stays within 5 points of what it
// was before: a small task must not wipe out the old classes. It also
// checks that learn's own configuration was used (an adapter floor of 150
// steps, in the run's log).
func TestLearnSmallTaskKeepsOldClasses(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST")
	}
	// The base: the first two tasks (4 classes, 300 images each) of a
	// 5-task stream, made a finished run by cutting its stream there.
	cfg := quickConfig("bicyc", 0)
	cfg.Data.TrainPerClass, cfg.Data.TestPerClass = 300, 200
	cfg.Train.Rotation = false
	base := t.TempDir()
	r0 := trainRun(t, cfg, base, 2)
	r0.stream.Tasks = r0.stream.Tasks[:2]
	if err := durable.WriteJSON(filepath.Join(base, "stream.json"), r0.streamRecord()); err != nil {
		t.Fatal(err)
	}
	ds, test, err := data.LoadFashionMNIST(cfg.Data.Dir)
	if err != nil {
		t.Fatal(err)
	}
	learnCfg := cfg
	learnCfg.Adapter.MinSteps = 150
	for _, n := range []int{10, 30} {
		root := t.TempDir()
		classes := map[int]string{8: "negative-bag", 9: "negative-boot"}
		writeInverted(t, ds, filepath.Join(root, "train"), classes, n)
		writeInverted(t, test, filepath.Join(root, "test"), classes, 200)
		dir := filepath.Join(t.TempDir(), "run")
		if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
			t.Fatal(err)
		}
		r, err := Resume(dir, Options{Log: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		before := slices.Clone(r.State().Reports[1].TAg)
		if err := r.Learn(context.Background(), filepath.Join(root, "train"), filepath.Join(root, "test"), LearnOptions{Config: &learnCfg}); err != nil {
			t.Fatal(err)
		}
		rep := r.State().Reports[2]
		r.Close()
		t.Logf("%d images per class: old tasks TAg %v -> %v (TAw %v), new task %.3f, transport %+v",
			n, before, rep.TAg[:2], rep.TAw[:2], rep.TAg[2], rep.Transport)
		// Both old tasks have 2 classes of 200 test images: the old classes'
		// accuracy is the mean of the two.
		was, is := (before[0]+before[1])/2, (rep.TAg[0]+rep.TAg[1])/2
		if is < was-0.05 {
			t.Errorf("%d images per class: old classes' TAg %.3f after learning, %.3f before", n, is, was)
		}
		if rep.TAg[2] < 0.45 {
			t.Errorf("%d images per class: new classes TAg %.3f", n, rep.TAg[2])
		}
		if rep.Transport == nil {
			t.Errorf("%d images per class: no transport record", n)
		}
		log, err := os.ReadFile(filepath.Join(dir, "log.txt"))
		if err != nil || !strings.Contains(string(log), "epochs for adapter.min_steps 150") {
			t.Errorf("%d images per class: the log does not show learn's adapter.min_steps 150 (%v)", n, err)
		}
	}
}

// TestChooseTransport runs the transport selection on real features of a
// one-task run whose backbone did not move (cur == old): the identity is
// exact there, so a scrambling A loses to it, an exact A ties with it and
// is kept (a tie prefers the method's own map), and with adapter.select
// off A is used unscored.
func TestChooseTransport(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST")
	}
	cfg := quickConfig("bicyc", 0)
	cfg.Data.TrainPerClass, cfg.Data.TestPerClass = 60, 20
	r := trainRun(t, cfg, t.TempDir(), 1)
	b := r.State().Backbone
	idx := r.trainIndices(r.stream.Tasks[0])
	z, err := features(b, r.train, idx, r.prep, cfg.Train.EvalBatch, false)
	if err != nil {
		t.Fatal(err)
	}
	p := featurePairs{old: b, cur: b, idx: idx, zNew: z, rows: len(idx)}
	identity := func(x []float32, n int) ([]float32, error) { return slices.Clone(x), nil }
	scramble := func(x []float32, n int) ([]float32, error) {
		out := slices.Clone(x)
		slices.Reverse(out)
		return out, nil
	}
	for i, c := range []struct {
		a       gauss.FeatureMap
		selects bool
		want    string
	}{{scramble, true, MapIdentity}, {identity, true, MapAdapter}, {scramble, false, MapAdapter}} {
		r.cfg.Adapter.Select = c.selects
		choice, _, err := r.chooseTransport(0, p, z, c.a, nil)
		if err != nil {
			t.Fatal(err)
		}
		if choice.Map != c.want {
			t.Errorf("case %d: chose %s (%+v), want %s", i, choice.Map, choice, c.want)
		}
		if c.selects && (choice.Images != 12 || choice.HeldOutMSE[MapIdentity] != 0) {
			t.Errorf("case %d: scored %d validation images, identity MSE %v; want 12 and 0", i, choice.Images, choice.HeldOutMSE[MapIdentity])
		}
	}
}
