package train

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/bicyc/bicyc/config"
)

// writeCIFAR10 writes a CIFAR-10 binary dataset (data_batch_1..5.bin,
// test_batch.bin: records of 1 label byte and 3072 pixel bytes) with
// perClass images per class in every file; each class is a colour with
// noise, so it is learnable in a few steps.
func writeCIFAR10(t *testing.T, dir string, perClass int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(11, 12))
	files := []string{"test_batch.bin"}
	for i := 1; i <= 5; i++ {
		files = append(files, fmt.Sprintf("data_batch_%d.bin", i))
	}
	for _, name := range files {
		var b []byte
		for i := 0; i < perClass; i++ {
			for c := 0; c < 10; c++ {
				b = append(b, byte(c))
				for ch := 0; ch < 3; ch++ {
					base := (c*37 + ch*91) % 256
					for p := 0; p < 1024; p++ {
						b = append(b, byte(base+rng.IntN(40)))
					}
				}
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestResNet18CIFARSmoke runs the paper's CIFAR-100 configuration's network
// (ResNet-18, 32x32 RGB, rotation on task 1, bicyc) end to end on a tiny
// CIFAR-10-format dataset written by the test: two tasks, a checkpoint, and
// an export of the RGB model.
func TestResNet18CIFARSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("trains ResNet-18")
	}
	dir := t.TempDir()
	writeCIFAR10(t, dir, 2)
	cfg := config.Default()
	cfg.Data = cifarData(dir)
	cfg.Stream.Tasks = 2
	cfg.Model.Backbone = "resnet18"
	cfg.Model.HiddenMult = 2
	cfg.Train.EpochsFirst, cfg.Train.Epochs, cfg.Train.BatchSize, cfg.Train.EvalBatch = 1, 1, 10, 20
	cfg.Adapter.Epochs, cfg.Adapter.TransportSamples = 1, 50
	// One epoch each, as the smoke test means: the step floors for small
	// tasks would make task 1 200 ResNet-18 steps.
	cfg.Train.MinStepsFirst, cfg.Adapter.MinSteps = 0, 0
	run := filepath.Join(t.TempDir(), "run")
	r := trainRun(t, cfg, run, 0)
	s := summary(t, r)
	if s.Completed != 2 || len(s.Reports[1].TAg) != 2 {
		t.Fatalf("completed %d tasks: %+v", s.Completed, s.Reports)
	}
	if err := Export(run, filepath.Join(run, "model"), 0); err != nil {
		t.Fatal(err)
	}
}

// cifarData is the default data configuration pointed at the small CIFAR-10
// files of dir: 3 channels of 32x32, the dataset's own mean and std, crop
// padding 4 and flips.
func cifarData(dir string) config.Data {
	d := config.Default().Data
	d.Kind, d.Dir, d.Channels, d.Height, d.Width, d.CropPadding = "cifar10", dir, 3, 32, 32, 4
	d.Mean, d.Std = nil, nil
	return d
}
