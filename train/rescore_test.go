package train

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/config"
)

// TestRescoreMatchesTraining rescores a run stopped after 2 tasks with
// another classifier (less shrinkage, an age bias, the test-time flip) and
// checks that it reports, task by task, the test and validation accuracies
// of a run trained from scratch with that classifier; that continuing it
// trains task 3 exactly as that run did; and that a difference outside
// classifier.* is refused.
func TestRescoreMatchesTraining(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST")
	}
	cfg := oneEpochConfig()
	src := filepath.Join(t.TempDir(), "src")
	plain := trainRun(t, cfg, src, 2)
	cal := cfg
	cal.Classifier.Shrink, cal.Classifier.AgeBias, cal.Classifier.TestFlip = 0.5, 0.01, true
	want := trainRun(t, cal, filepath.Join(t.TempDir(), "want"), 3)

	r, err := Rescore(src, cal, filepath.Join(t.TempDir(), "rescored"), Options{Log: io.Discard, StopAfter: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if r.state.Completed != 2 {
		t.Fatalf("rescored %d tasks, want the 2 src completed", r.state.Completed)
	}
	if slices.Equal(plain.state.Reports[1].TAg, r.state.Reports[1].TAg) {
		t.Fatal("test setup: the other classifier changed no accuracy after task 2")
	}
	if err := r.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, got := range r.state.Reports {
		w := want.state.Reports[i]
		if !slices.Equal(got.TAg, w.TAg) || !slices.Equal(got.TAw, w.TAw) || !slices.Equal(got.ValTAg, w.ValTAg) {
			t.Errorf("task %d: TAg %v TAw %v val %v, trained from scratch %v %v %v", i+1, got.TAg, got.TAw, got.ValTAg, w.TAg, w.TAw, w.ValTAg)
		}
		if i < 2 && got.TrainedIn != src {
			t.Errorf("task %d: trained in %q, want %q", i+1, got.TrainedIn, src)
		}
	}
	for c, g := range want.state.Prototypes {
		if !slices.Equal(r.state.Prototypes[c].Mean, g.Mean) {
			t.Errorf("class %d: prototype mean differs from the run trained from scratch", c)
		}
	}

	other := cal
	other.RunName, other.Threads, other.Export.Enabled = "elsewhere", 1, !cal.Export.Enabled
	if keys := config.RescoreDifferences(cal, other); len(keys) != 0 {
		t.Errorf("run name, threads and export keys reported as differences: %v", keys)
	}
	other.Train.Epochs = 2
	_, err = Rescore(src, other, filepath.Join(t.TempDir(), "refused"), Options{Log: io.Discard})
	if !errors.Is(err, ErrForkMismatch) || !strings.Contains(err.Error(), "train.epochs") {
		t.Errorf("rescore with train.epochs changed: %v, want ErrForkMismatch naming the key", err)
	}
}
