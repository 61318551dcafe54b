package train

import (
	"context"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/safetensors"
)

// smallQuick is the quick profile on 60 training and 20 test images per
// class: seconds per task.
func smallQuick(method config.Method) config.Config {
	cfg := quickConfig(method, 0)
	cfg.Data.TrainPerClass, cfg.Data.TestPerClass = 60, 20
	return cfg
}

// TestLinearBiasTrainedSavedExported trains two tasks with model.mapper
// linear and model.linear_bias on real Fashion-MNIST and checks that A's
// bias is trained (it left its initial value), comes back from the
// checkpoint bit for bit, and that the exported adapter.onnx, run by ONNX
// Runtime, computes x W^T + b as a float64 reference does.
func TestLinearBiasTrainedSavedExported(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST")
	}
	cfg := smallQuick(config.MethodBicyc)
	cfg.Model.Mapper, cfg.Model.LinearBias = arch.Linear, true
	cfg.Export.Enabled = false
	dir := t.TempDir()
	r := trainRun(t, cfg, dir, 2)
	a := r.State().Adapter
	if a == nil || a.Kind() != arch.LinearBias {
		t.Fatalf("adapter %v, want kind %s", a, arch.LinearBias)
	}
	s := cfg.Model.FeatureDim
	initial, err := models.NewMapper(arch.LinearBias, s, 0, r.rng("adapter", 1))
	if err != nil {
		t.Fatal(err)
	}
	weight, bias := a.Params()[0].Data().([]float32), a.Params()[1].Data().([]float32)
	if slices.Equal(bias, initial.Params()[1].Data().([]float32)) {
		t.Error("the adapter's bias did not train")
	}
	st, err := LoadCheckpoint(checkpointDir(dir, 2), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st.Adapter.Kind() != arch.LinearBias || !slices.EqualFunc(st.Adapter.State(), a.State(), equalTensor) {
		t.Error("the checkpoint's adapter differs from the trained one")
	}
	model, b := exportBundle(t, dir)
	if b.Manifest.Adapter != string(arch.LinearBias) {
		t.Errorf("manifest adapter %q, want %q", b.Manifest.Adapter, arch.LinearBias)
	}
	clf, err := infer.Open(context.Background(), model, infer.WithLog(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer clf.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([][]float32, 5)
	for i := range x {
		x[i] = make([]float32, s)
		for j := range x[i] {
			x[i][j] = float32(rng.NormFloat64())
		}
	}
	got, err := clf.Transport(context.Background(), x)
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range x {
		for o := range s {
			want := float64(bias[o])
			for c, v := range row {
				want += float64(weight[o*s+c]) * float64(v)
			}
			if d := abs(float64(got[i][o]) - want); d > 1e-4 {
				t.Fatalf("row %d feature %d: adapter.onnx %g, reference %g", i, o, got[i][o], want)
			}
		}
	}
}

func equalTensor(a, b safetensors.Tensor) bool {
	return a.Name == b.Name && slices.Equal(a.Shape, b.Shape) && slices.Equal(a.Data, b.Data)
}

// TestAdaGaussEpochs checks adapter.adagauss_epochs: "adapter" trains
// adagauss's post-task adapter for adapter.epochs instead of train.epochs,
// which changes its loss and nothing before it (task 1, and task 2's Stage
// I losses, are bit for bit the same).
func TestAdaGaussEpochs(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST")
	}
	cfg := smallQuick(config.MethodAdaGauss)
	cfg.Adapter.Epochs, cfg.Adapter.Select = 1, false
	if cfg.PostTaskAdapterEpochs() != cfg.Train.Epochs {
		t.Fatalf("default post-task epochs %d, want train.epochs %d", cfg.PostTaskAdapterEpochs(), cfg.Train.Epochs)
	}
	full := trainRun(t, cfg, t.TempDir(), 2).State().Reports
	cfg.Adapter.AdaGaussEpochs = config.AdaGaussEpochsAdapter
	if cfg.PostTaskAdapterEpochs() != 1 {
		t.Fatalf("post-task epochs %d, want adapter.epochs 1", cfg.PostTaskAdapterEpochs())
	}
	short := trainRun(t, cfg, t.TempDir(), 2).State().Reports
	if !slices.Equal(full[0].TAg, short[0].TAg) || !maps.Equal(full[1].Losses, short[1].Losses) {
		t.Errorf("task 1 or task 2's Stage I changed: %v %v vs %v %v", full[0].TAg, full[1].Losses, short[0].TAg, short[1].Losses)
	}
	if full[1].AdapterLoss == short[1].AdapterLoss {
		t.Errorf("adapter loss %v with 1 and %d epochs", short[1].AdapterLoss, cfg.Train.Epochs)
	}
}
