package infer

import (
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/export"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/safetensors"
)

// The test bundles are real exports (package export) of a small random
// convnet over real Fashion-MNIST images: prototypes are estimated from the
// backbone's features of the first fixturePerClass test images of each
// class, exactly as training estimates new-class statistics, so
// classification of the other images is far better than chance.
const (
	fixtureFeatureDim = 8
	fixturePerClass   = 30
	fixtureTopK       = 3
)

// fixture is built once per test binary.
type fixture struct {
	twoTasks string // bundle of 10 classes in two tasks, with adapter.onnx
	oneTask  string // bundle of the first task's 5 classes, no adapter

	test      *data.Dataset        // Fashion-MNIST test set
	reference *gauss.Classifier    // the scores model.onnx must reproduce
	adapter   []safetensors.Tensor // the weights of adapter.onnx
}

var (
	fixtureOnce  sync.Once
	fixtureValue *fixture
	fixtureErr   error
	fixtureRoot  string // removed by TestMain
)

// loadFixture returns the shared fixture, building it on first use.
func loadFixture(t testing.TB) *fixture {
	t.Helper()
	requireRuntime(t)
	fixtureOnce.Do(func() { fixtureValue, fixtureErr = buildFixture() })
	if fixtureErr != nil {
		t.Fatalf("building the test bundles: %v", fixtureErr)
	}
	return fixtureValue
}

// fashionImage returns test image i as a Go image.
func fashionImage(d *data.Dataset, i int) image.Image {
	return &image.Gray{Pix: d.Image(i), Stride: d.Width, Rect: image.Rect(0, 0, d.Width, d.Height)}
}

// fixtureTrainIndices returns the first n test-set indices of each class:
// the images the prototypes are estimated from.
func fixtureTrainIndices(d *data.Dataset, n int) [][]int {
	out := make([][]int, d.NumClasses())
	for i, y := range d.Labels {
		if len(out[y]) < n {
			out[y] = append(out[y], i)
		}
	}
	return out
}

func buildFixture() (*fixture, error) {
	root, err := os.MkdirTemp("", "infer-test-")
	if err != nil {
		return nil, err
	}
	fixtureRoot = root
	dir := data.FashionMNISTDir
	test, err := data.LoadIDX(filepath.Join(dir, "t10k-images-idx3-ubyte.gz"), filepath.Join(dir, "t10k-labels-idx1-ubyte.gz"))
	if err != nil {
		return nil, err
	}
	mean, std := data.DefaultNormalization(data.KindFashionMNIST)
	pre := data.Preprocess{Channels: 1, Height: 28, Width: 28, Mean: mean, Std: std, Resize: data.ResizeCatmullRom}

	rng := rand.New(rand.NewPCG(1, 2))
	shape := export.BackboneShape{Arch: export.ArchConvNet, InChannels: 1, Height: 28, Width: 28, FeatureDim: fixtureFeatureDim}
	weights := randomConvNet(rng, 1, fixtureFeatureDim)
	backbone, err := export.Backbone(shape, weights)
	if err != nil {
		return nil, err
	}

	// Prototypes from the backbone's features, computed with ONNX Runtime
	// through the same session code the Classifier uses.
	cfg := defaultConfig()
	sessions, err := loadWith(ProviderCPU, &cfg, []modelSpec{{path: "backbone.onnx", onnx: backbone, inputs: []string{"image"}, outputs: []string{"features"}}})
	if err != nil {
		return nil, err
	}
	defer destroyAll(sessions)
	protos := make([]gauss.Gaussian, test.NumClasses())
	for c, idx := range fixtureTrainIndices(test, fixturePerClass) {
		batch := make([]float32, 0, len(idx)*pre.ImageSize())
		for _, i := range idx {
			batch = append(batch, pre.Image(fashionImage(test, i))...)
		}
		out, err := sessions[0].run(batch, []int64{int64(len(idx)), 1, 28, 28}, fixtureFeatureDim)
		if err != nil {
			return nil, err
		}
		if protos[c], err = gauss.Estimate(out, len(idx), fixtureFeatureDim); err != nil {
			return nil, err
		}
	}

	opts := gauss.DefaultClassifierOptions()
	reference, err := gauss.NewClassifier(protos, nil, opts)
	if err != nil {
		return nil, err
	}
	f := &fixture{
		twoTasks:  filepath.Join(root, "two-tasks"),
		oneTask:   filepath.Join(root, "one-task"),
		test:      test,
		reference: reference,
	}
	f.adapter = randomMLP(rng, fixtureFeatureDim)
	classes := make([]int, test.NumClasses())
	for i := range classes {
		classes[i] = i
	}
	in := export.Input{Arch: export.ArchConvNet, FeatureDim: fixtureFeatureDim, Backbone: weights,
		AdapterKind: export.AdapterMLP, Adapter: f.adapter, Preprocess: pre, Version: "test"}
	if err := writeFixtureBundle(f.twoTasks, in, protos, opts, [][]int{classes[:5], classes[5:]}); err != nil {
		return nil, err
	}
	in.Adapter = nil
	if err := writeFixtureBundle(f.oneTask, in, protos[:5], opts, [][]int{classes[:5]}); err != nil {
		return nil, err
	}
	return f, nil
}

// writeFixtureBundle exports a model directory of the prototypes protos
// (class c = protos[c], named from data.FashionMNISTClasses) with
// export.Write, as the trainer does.
func writeFixtureBundle(dir string, in export.Input, protos []gauss.Gaussian, opts gauss.ClassifierOptions, tasks [][]int) error {
	cls, err := gauss.NewClassifier(protos, nil, opts)
	if err != nil {
		return err
	}
	in.Tables = cls.Tables()
	in.Classifier = gauss.ClassifierOptions{Normalize: opts.Normalize, Shrink: opts.Shrink, FullGaussian: opts.FullGaussian, TopK: fixtureTopK}
	s := in.FeatureDim
	for _, g := range protos {
		for i := range s {
			in.Means = append(in.Means, float32(g.Mean[i]))
			for j := range s {
				in.Covariances = append(in.Covariances, float32(g.Cov.At(i, j)))
			}
		}
	}
	in.Tasks = tasks
	for t, ids := range tasks {
		for _, id := range ids {
			in.Classes = append(in.Classes, bundle.Class{ID: id, Name: data.FashionMNISTClasses[id], Task: t + 1})
		}
	}
	return export.Write(dir, in)
}

// randomConvNet draws the tensors of package models' convnet backbone
// (names and shapes as export.Backbone documents them), He-scaled so
// features neither vanish nor explode.
func randomConvNet(rng *rand.Rand, in, s int) []safetensors.Tensor {
	var ts []safetensors.Tensor
	for l, ch := range [][2]int{{32, in}, {64, 32}, {128, 64}} {
		out, cin := ch[0], ch[1]
		ts = append(ts,
			randomTensor(rng, fmt.Sprintf("conv%d.weight", l+1), []int{out, cin, 3, 3}, heStd(cin*9)),
			constTensor(fmt.Sprintf("bn%d.weight", l+1), out, 1),
			constTensor(fmt.Sprintf("bn%d.bias", l+1), out, 0),
			constTensor(fmt.Sprintf("bn%d.running_mean", l+1), out, 0),
			constTensor(fmt.Sprintf("bn%d.running_var", l+1), out, 1))
	}
	return append(ts,
		randomTensor(rng, "reduce.weight", []int{s, 128, 1, 1}, heStd(128)),
		constTensor("reduce.bias", s, 0))
}

// randomMLP draws the adapter's tensors (export.Adapter, kind mlp, hidden
// width 32S as in docs/method.md, "Networks").
func randomMLP(rng *rand.Rand, s int) []safetensors.Tensor {
	h := 32 * s
	return []safetensors.Tensor{
		randomTensor(rng, "fc1.weight", []int{h, s}, heStd(s)),
		constTensor("fc1.bias", h, 0.01),
		randomTensor(rng, "fc2.weight", []int{s, h}, heStd(h)),
		constTensor("fc2.bias", s, 0),
	}
}

func heStd(fanIn int) float64 { return math.Sqrt(2 / float64(fanIn)) }

func randomTensor(rng *rand.Rand, name string, shape []int, std float64) safetensors.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * std)
	}
	return safetensors.Tensor{Name: name, Shape: shape, Data: v}
}

func constTensor(name string, n int, value float32) safetensors.Tensor {
	v := make([]float32, n)
	for i := range v {
		v[i] = value
	}
	return safetensors.Tensor{Name: name, Shape: []int{n}, Data: v}
}
