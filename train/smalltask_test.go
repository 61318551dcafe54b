package train

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/data"
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
		{"dup", LearnOptions{}, `class "Bag" already exists`},
		{"few", LearnOptions{}, `has 1 training images, need at least 2`},
		{"few", LearnOptions{AllowDuplicateNames: true}, `need at least 2`},
		{"dup", LearnOptions{Config: &changed}, "seed"},
	} {
		err := r.Learn(context.Background(), filepath.Join(root, c.dir, "train"), filepath.Join(root, c.dir, "test"), c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: error %v, want one containing %q", i, err, c.want)
		}
		if i == 3 && !errors.Is(err, ErrForkMismatch) {
			t.Errorf("case %d: error %v does not wrap ErrForkMismatch", i, err)
		}
	}
	if len(r.Stream().Tasks) != 1 || r.State().Completed != 1 {
		t.Errorf("after refused learns: stream %v, %d completed", r.Stream().Tasks, r.State().Completed)
	}
}
