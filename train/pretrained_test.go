package train

import (
	"context"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/pretrained"
)

// TestPretrainedFrozenFineTune starts a narrow ImageNet ResNet-18 from the pretrained package's fixture with
// its first four stages frozen and a split learning rate, trains task 1, resumes for task 2 and exports: the
// frozen stages keep the imported weights and BatchNorm statistics throughout, layer4 and the reduction train.
func TestPretrainedFrozenFineTune(t *testing.T) {
	dir := t.TempDir()
	writeCIFAR10(t, dir, 2)
	cfg := config.Default()
	cfg.Data = cifarData(dir)
	cfg.Stream.Tasks = 2
	cfg.Model.Backbone, cfg.Model.Width, cfg.Model.FreezeStages = arch.ResNet18ImageNet, 4, 4
	cfg.Model.Pretrained = filepath.Join("..", "pretrained", "testdata", "resnet18_w4.onnx")
	cfg.Model.HiddenMult = 2
	cfg.Train.BackboneLRScale = 0.1
	cfg.Train.EpochsFirst, cfg.Train.Epochs, cfg.Train.BatchSize, cfg.Train.EvalBatch = 1, 1, 10, 20
	cfg.Adapter.Epochs, cfg.Adapter.TransportSamples = 1, 50

	want := importedState(t, cfg)
	frozen := func(name string) bool {
		return !strings.HasPrefix(name, "layer4.") && !strings.HasPrefix(name, "reduce.")
	}
	check := func(when string, b *models.Backbone) {
		t.Helper()
		if b.FrozenStages() != 4 {
			t.Errorf("%s: %d frozen stages, want 4", when, b.FrozenStages())
		}
		trained := false
		for _, ts := range b.State() {
			same := slices.Equal(ts.Data, want[ts.Name])
			if frozen(ts.Name) && !same {
				t.Errorf("%s: frozen %s differs from the pretrained file", when, ts.Name)
			}
			trained = trained || ts.Name == "layer4.1.conv2.weight" && !same
		}
		if !trained {
			t.Errorf("%s: layer4.1.conv2.weight did not train", when)
		}
	}

	run := filepath.Join(t.TempDir(), "run")
	check("after task 1", trainRun(t, cfg, run, 1).State().Backbone)
	r, err := Resume(run, Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("after resuming for task 2", r.State().Backbone)
	if s := summary(t, r); s.Completed != 2 {
		t.Fatalf("completed %d tasks", s.Completed)
	}
	if err := Export(run, filepath.Join(run, "model"), 0); err != nil {
		t.Fatal(err)
	}
}

// importedState returns, by state-dict name, the tensors of cfg's backbone
// as pretrained.ResNet18 imports them from cfg.Model.Pretrained (the 1x1
// reduction at a fixed random start).
func importedState(t *testing.T, cfg config.Config) map[string][]float32 {
	t.Helper()
	imported, err := models.NewBackboneWidth(cfg.Model.Backbone, cfg.Model.Width, cfg.Data.Channels, cfg.Model.FeatureDim, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := pretrained.ResNet18(cfg.Model.Pretrained, imported); err != nil {
		t.Fatal(err)
	}
	state := map[string][]float32{}
	for _, ts := range imported.State() {
		state[ts.Name] = ts.Data
	}
	return state
}

// TestBackboneLRScale checks the split: every trainable backbone tensor but the reduction's at the factor.
func TestBackboneLRScale(t *testing.T) {
	b, err := models.NewBackboneWidth(arch.ResNet18ImageNet, 4, 3, 8, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.FreezeStages(4); err != nil {
		t.Fatal(err)
	}
	if m := backboneLRScale(b, 1); m != nil {
		t.Errorf("scale 1 gave %d entries", len(m))
	}
	m := backboneLRScale(b, 0.1)
	reduce := b.ReduceParams()
	if len(m) != len(b.Params())-2 {
		t.Errorf("%d scaled tensors of %d trainable", len(m), len(b.Params()))
	}
	for _, p := range b.Params() {
		if _, ok := m[p]; ok == slices.Contains(reduce, p) {
			t.Errorf("tensor %v: scaled %t", p.Shape(), ok)
		}
	}
}
