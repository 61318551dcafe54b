package reliability

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/rundir"
	"github.com/bicyc/bicyc/train"
)

// TestDegenerateTrainingData trains the real bicyc command on classes of a
// single image, where the trainer's class statistics cannot estimate a
// covariance: without flips each class has one feature row and gets
// gauss.EstimateDiagonal's documented fallback (a diagonal covariance,
// variance 1 for the first class of a task, then the mean variance of the
// classes before it); with flips it has two rows (the image and its
// mirror), a rank-1 covariance plus the ridge. Both runs must finish with
// finite metrics and a model directory that opens. A task of one image is
// refused with a clear error, since the anti-collapse loss needs a batch
// of two.
func TestDegenerateTrainingData(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST with the real bicyc binary")
	}
	parent := t.TempDir()
	single := []string{"--set", "quick_profile.train_per_class=1", "--set", "quick_profile.test_per_class=20", "--set", "quick_profile.transport_samples=50"}
	cases := []struct {
		name  string
		flips bool
	}{
		{"single", false},
		{"single-flipped", true},
	}
	for i, c := range cases {
		args := append(trainArgs(parent, c.name), single...)
		if !c.flips {
			args = append(args, "--set", "data.horizontal_flip=false")
		}
		startBicyc(t, args...).finish(t, runTimeout)
		dir := filepath.Join(parent, c.name)
		v, err := checkRunDir(dir)
		if err != nil {
			t.Fatalf("case %d %s: %v", i, c.name, err)
		}
		if v.Latest != 2 || !v.Model {
			t.Fatalf("case %d %s: %+v, want 2 tasks and a model", i, c.name, v)
		}
		var s rundir.Summary
		if err := readJSONFile(filepath.Join(dir, "metrics.json"), &s); err != nil {
			t.Fatal(err)
		}
		for _, m := range []float64{s.TAg.ALast, s.TAg.AInc, s.TAw.ALast} {
			if math.IsNaN(m) || m < 0 || m > 1 {
				t.Errorf("case %d %s: metric %v", i, c.name, m)
			}
		}
		cfg, err := readRunConfig(dir)
		if err != nil {
			t.Fatal(err)
		}
		st, err := train.LoadCheckpoint(filepath.Join(dir, "checkpoints", "task-01"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		s0 := st.Prototypes[0].Cov
		offDiagonal := s0.At(0, 1)
		t.Logf("case %d %s: A_last TAg %.3f; class 0 after task 1: variance %.4g, covariance[0][1] %.4g", i, c.name, s.TAg.ALast, s0.At(0, 0), offDiagonal)
		if !c.flips {
			if offDiagonal != 0 || math.Abs(s0.At(0, 0)-(1+gauss.Ridge)) > 1e-6 {
				t.Errorf("case %d %s: class 0 covariance [0][0] %v, [0][1] %v; want the diagonal fallback, 1 + ridge and 0", i, c.name, s0.At(0, 0), offDiagonal)
			}
		} else if offDiagonal == 0 {
			t.Errorf("case %d %s: class 0 of an image and its mirror has a diagonal covariance, want the rank-1 estimate", i, c.name)
		}
	}

	p := startBicyc(t, append(trainArgs(parent, "one-image-task"), "--set", "stream.tasks=10", "--set", "quick_profile.train_per_class=1", "--set", "data.horizontal_flip=false")...)
	select {
	case <-p.exited:
	case <-time.After(runTimeout):
		t.Fatal("a task of one image: bicyc did not stop")
	}
	if out := p.Output(); p.state.Success() || !strings.Contains(out, "task 1 has 1 training images, need at least 2") {
		t.Errorf("a task of one image: %v, output:\n%s", p.state, out)
	}
}
