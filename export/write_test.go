package export

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/safetensors"
)

// fashionLabels returns the first n Fashion-MNIST test labels.
func fashionLabels(t *testing.T, n int) []int {
	t.Helper()
	return slices.Clone(fashionTest(t).Labels[:n])
}

// exportFixture is a convnet with random weights, its features on real
// Fashion-MNIST test images, and Gaussian prototypes estimated from them
// for a two-task stream of all ten classes.
type exportFixture struct {
	in         Input
	classifier *gauss.Classifier
	images     []float32
	n          int
}

func newExportFixture(t *testing.T) exportFixture {
	t.Helper()
	const n, s = 300, 8
	rng := rand.New(rand.NewPCG(23, 24))
	pre := imaging.Preprocess{Channels: 1, Height: 28, Width: 28, Mean: []float32{0.2860}, Std: []float32{0.3530},
		Resize: imaging.ResizeCatmullRom}
	shape := BackboneShape{Arch: arch.ConvNet, InChannels: 1, Height: 28, Width: 28, FeatureDim: s}
	state := randomConvNet(rng, 1, s)
	backbone, err := Backbone(shape, state)
	if err != nil {
		t.Fatal(err)
	}
	images, labels := fashionImages(t, n), fashionLabels(t, n)
	feats := runModel(t, backbone, []string{bundle.TensorImage}, [][]float32{images}, [][]int64{{n, 1, 28, 28}}, []string{bundle.TensorFeatures})[0].([]float32)

	tasks := [][]int{{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}}
	var classes []bundle.Class
	var protos []gauss.Gaussian
	in := Input{Arch: arch.ConvNet, FeatureDim: s, Backbone: state, Preprocess: pre, Tasks: tasks,
		Classifier: gauss.ClassifierOptions{Normalize: true, Shrink: 3},
		Config:     json.RawMessage(`{"dataset":"fashion-mnist","seed":23}`),
		Metrics:    json.RawMessage(`{"a_last":0.1}`),
		Version:    "v0.1.0-test", CreatedAt: time.Date(2026, 4, 2, 9, 30, 0, 0, time.UTC)}
	for task, ids := range tasks {
		for _, id := range ids {
			var rows []float32
			for i, l := range labels {
				if l == id {
					rows = append(rows, feats[i*s:(i+1)*s]...)
				}
			}
			g, err := gauss.Estimate(rows, len(rows)/s, s)
			if err != nil {
				t.Fatalf("class %d: %v", id, err)
			}
			protos = append(protos, g)
			classes = append(classes, bundle.Class{ID: id, Name: data.FashionMNISTClasses[id], Task: task + 1})
		}
	}
	c, err := gauss.NewClassifier(protos, nil, gauss.ClassifierOptions{Shrink: 3, Normalize: true})
	if err != nil {
		t.Fatal(err)
	}
	in.Classes, in.Prototypes = classes, protos
	in.AdapterKind = arch.MLP
	in.Adapter = []safetensors.Tensor{
		randomTensor(rng, "fc1.weight", []int{32 * s, s}, 0.3, false), randomTensor(rng, "fc1.bias", []int{32 * s}, 0.1, false),
		randomTensor(rng, "fc2.weight", []int{s, 32 * s}, 0.1, false), randomTensor(rng, "fc2.bias", []int{s}, 0.1, false)}
	return exportFixture{in: in, classifier: c, images: images, n: n}
}

// TestWriteExportsAWorkingModel writes a model directory, opens it with
// package bundle, validates every ONNX file with the checker and checks
// that model.onnx, run on real images, gives gauss.Classifier's scores on
// the features of backbone.onnx.
func TestWriteExportsAWorkingModel(t *testing.T) {
	fx := newExportFixture(t)
	dir := filepath.Join(t.TempDir(), "fmnist")
	if err := Write(dir, fx.in); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := b.Manifest
	if m.Backbone != string(arch.ConvNet) || m.FeatureDim != 8 || m.Adapter != string(arch.MLP) || m.Classifier.TopK != gauss.DefaultTopK ||
		m.BicycVersion != "v0.1.0-test" || m.MinRuntimeVersion != bundle.MinRuntimeVersion || len(m.Classes) != 10 ||
		m.Classes[7].Name != "Sneaker" || m.Preprocess.Height != 28 {
		t.Fatalf("manifest: %+v", m)
	}
	want := bundle.NewPrototypes(fx.in.Prototypes, fx.classifier.Tables().Bias, true)
	if !slices.Equal(b.Prototypes.Means, want.Means) || !slices.Equal(b.Prototypes.Bias, want.Bias) ||
		!slices.Equal(b.Prototypes.Covariances, want.Covariances) || !b.Prototypes.Normalize {
		t.Fatal("prototypes differ from the exported ones")
	}

	models := map[string][]byte{}
	for _, name := range []string{bundle.BackboneFile, bundle.AdapterFile, bundle.ClassifierFile, bundle.ModelFile, bundle.ClassifierDataFile} {
		if models[name], err = b.ReadFile(name); err != nil {
			t.Fatal(err)
		}
	}
	checkONNX(t, models)

	const n = 40
	images := fx.images[:n*28*28]
	feats := runModel(t, models[bundle.BackboneFile], []string{bundle.TensorImage}, [][]float32{images}, [][]int64{{n, 1, 28, 28}},
		[]string{bundle.TensorFeatures})[0].([]float32)
	outs := runModelIn(t, dir, models[bundle.ModelFile], []string{bundle.TensorImage}, [][]float32{images}, [][]int64{{n, 1, 28, 28}},
		[]string{bundle.TensorScores})
	wantScores := make([]float64, n*10)
	for i, v := range fx.classifier.Scores(feats, n) {
		wantScores[i] = float64(v)
	}
	checkScores(t, "model.onnx vs gauss", outs, wantScores, n, 10)
	outs = runModelIn(t, dir, models[bundle.ClassifierFile], []string{bundle.TensorFeatures}, [][]float32{feats}, [][]int64{{n, 8}},
		[]string{bundle.TensorScores})
	checkScores(t, "classifier.onnx vs gauss", outs, wantScores, n, 10)
	pred := fx.classifier.Predict(feats, n, nil)
	scores := outs[0].([]float32)
	for r := range n {
		if best := argmin(scores[r*10 : (r+1)*10]); best != pred[r] {
			t.Errorf("image %d: model.onnx's best class index %d, gauss %d", r, best, pred[r])
		}
	}
	adapted := runModel(t, models[bundle.AdapterFile], []string{bundle.TensorFeaturesOld}, [][]float32{feats}, [][]int64{{n, 8}},
		[]string{bundle.TensorFeatures})[0].([]float32)
	if len(adapted) != n*8 {
		t.Fatalf("adapter.onnx gave %d values, want %d", len(adapted), n*8)
	}
}

func TestWriteWithoutAdapterAndSmallTopK(t *testing.T) {
	fx := newExportFixture(t)
	fx.in.Adapter = nil
	fx.in.Classifier.TopK = 20 // more than the 10 classes: clipped to K
	dir := filepath.Join(t.TempDir(), "model")
	if err := Write(dir, fx.in); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b.Has(bundle.AdapterFile) || b.Manifest.Adapter != "" || b.Manifest.Classifier.TopK != 10 {
		t.Fatalf("adapter listed %v, kind %q, top_k %d; want none, \"\", 10", b.Has(bundle.AdapterFile), b.Manifest.Adapter, b.Manifest.Classifier.TopK)
	}
}

func TestWriteRejectsInconsistentInput(t *testing.T) {
	for i, tc := range []struct {
		edit func(*Input)
		want string
	}{
		{func(in *Input) { in.Classes = in.Classes[:9] }, "10 prototypes and 0 priors for 9 classes"},
		{func(in *Input) { in.Priors = []float64{1, 2} }, "10 prototypes and 2 priors for 10 classes"},
		{func(in *Input) { in.Prototypes[3] = gauss.Gaussian{Mean: make([]float64, 4)} }, "the prototype of class 3 has dimension 4, the model 8"},
		{func(in *Input) { in.Classifier.TopK = -1 }, "top_k -1"},
		{func(in *Input) {
			in.HeldOut = &HeldOut{Features: make([]float32, 8), ClassIDs: []int{12}, AcceptRate: 0.95}
		}, "held-out image 0 has class 12, which the model does not have"},
		{func(in *Input) {
			in.HeldOut = &HeldOut{Features: make([]float32, 7), ClassIDs: []int{2}, AcceptRate: 0.95}
		}, "7 feature values for 1 held-out images of dimension 8"},
		{func(in *Input) {
			in.HeldOut = &HeldOut{Features: make([]float32, 8), ClassIDs: []int{2}, AcceptRate: 0.95}
		}, "1 held-out images, want at least 20"},
		{func(in *Input) { in.AdapterKind = "attention" }, `unknown adapter kind "attention"`},
		{func(in *Input) { in.Backbone = in.Backbone[1:] }, `backbone tensor "conv1.weight" is missing`},
		{func(in *Input) { in.Preprocess.Channels = 2 }, "channels 2, want 1 or 3"},
		{func(in *Input) { in.Tasks = in.Tasks[:1] }, "the task stream puts it in task 0 (0: none)"},
	} {
		fx := newExportFixture(t)
		tc.edit(&fx.in)
		dir := filepath.Join(t.TempDir(), "model")
		err := Write(dir, fx.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("case %d: error %v, want one containing %q", i, err, tc.want)
		}
		if _, statErr := os.Stat(dir); !errors.Is(statErr, os.ErrNotExist) {
			t.Errorf("case %d: a failed export left %s behind", i, dir)
		}
	}
}
