// Package testmodel builds the small real models that the tests of the
// inference packages (infer, author) classify with: real exports (package
// export) of a small random convnet over real Fashion-MNIST images, whose
// prototypes are estimated from the backbone's features of the first
// PerClass test images of each class, exactly as training estimates
// new-class statistics, so classification of the other images is far
// better than chance. Only tests import it.
package testmodel

import (
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"path/filepath"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/export"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/safetensors"
)

// The models' sizes.
const (
	FeatureDim = 8  // S
	PerClass   = 30 // test images per class the prototypes come from
	TopK       = 3  // the manifests' top_k
)

// Models are the built model directories and what they were built from.
type Models struct {
	TwoTasks string // 10 classes in two tasks, with adapter.onnx
	OneTask  string // the first task's 5 classes, no adapter

	Test      *data.Dataset        // Fashion-MNIST test set
	Reference *gauss.Classifier    // the scores model.onnx must reproduce
	Adapter   []safetensors.Tensor // the weights of adapter.onnx
}

// Image returns test image i of d as a Go image.
func Image(d *data.Dataset, i int) image.Image {
	return &image.Gray{Pix: d.Image(i), Stride: d.Width, Rect: image.Rect(0, 0, d.Width, d.Height)}
}

// TrainIndices returns the first n test-set indices of each class: with n
// = PerClass, the images the prototypes are estimated from.
func TrainIndices(d *data.Dataset, n int) [][]int {
	out := make([][]int, d.NumClasses())
	for i, y := range d.Labels {
		if len(out[y]) < n {
			out[y] = append(out[y], i)
		}
	}
	return out
}

// HeldOut returns n test-set indices per class that the prototypes were
// not estimated from.
func HeldOut(d *data.Dataset, n int) []int {
	count := make([]int, d.NumClasses())
	var out []int
	for i, y := range d.Labels {
		count[y]++
		if count[y] > PerClass && count[y] <= PerClass+n {
			out = append(out, i)
		}
	}
	return out
}

// Build writes the models under root. The process's ONNX Runtime
// environment must be initialised (infer.InitRuntime): the backbone's
// features are computed with it.
func Build(root string) (*Models, error) {
	dir := data.FashionMNISTDir
	test, err := data.LoadIDX(filepath.Join(dir, "t10k-images-idx3-ubyte.gz"), filepath.Join(dir, "t10k-labels-idx1-ubyte.gz"))
	if err != nil {
		return nil, err
	}
	mean, std := data.DefaultNormalization(data.KindFashionMNIST)
	pre := imaging.Preprocess{Channels: 1, Height: 28, Width: 28, Mean: mean, Std: std, Resize: imaging.ResizeCatmullRom}

	rng := rand.New(rand.NewPCG(1, 2))
	shape := export.BackboneShape{Arch: arch.ConvNet, InChannels: 1, Height: 28, Width: 28, FeatureDim: FeatureDim}
	weights := randomConvNet(rng, 1, FeatureDim)
	backbone, err := export.Backbone(shape, weights)
	if err != nil {
		return nil, err
	}
	protos := make([]gauss.Gaussian, test.NumClasses())
	for c, idx := range TrainIndices(test, PerClass) {
		batch := make([]float32, 0, len(idx)*pre.ImageSize())
		for _, i := range idx {
			batch = append(batch, pre.Image(Image(test, i))...)
		}
		out, err := embed(backbone, batch, len(idx))
		if err != nil {
			return nil, err
		}
		if protos[c], err = gauss.Estimate(out, len(idx), FeatureDim); err != nil {
			return nil, err
		}
	}

	opts := gauss.DefaultClassifierOptions()
	reference, err := gauss.NewClassifier(protos, nil, opts)
	if err != nil {
		return nil, err
	}
	m := &Models{
		TwoTasks:  filepath.Join(root, "two-tasks"),
		OneTask:   filepath.Join(root, "one-task"),
		Test:      test,
		Reference: reference,
	}
	m.Adapter = randomMLP(rng, FeatureDim)
	classes := make([]int, test.NumClasses())
	for i := range classes {
		classes[i] = i
	}
	in := export.Input{Arch: arch.ConvNet, FeatureDim: FeatureDim, Backbone: weights,
		AdapterKind: arch.MLP, Adapter: m.Adapter, Preprocess: pre, Version: "test"}
	if err := writeBundle(m.TwoTasks, in, protos, opts, [][]int{classes[:5], classes[5:]}); err != nil {
		return nil, err
	}
	in.Adapter = nil
	if err := writeBundle(m.OneTask, in, protos[:5], opts, [][]int{classes[:5]}); err != nil {
		return nil, err
	}
	return m, nil
}

// embed runs the backbone on an NCHW batch of n 28x28 gray images with
// ONNX Runtime, on the CPU.
func embed(backbone []byte, batch []float32, n int) ([]float32, error) {
	s, err := ort.NewDynamicAdvancedSessionWithONNXData(backbone, []string{bundle.TensorImage}, []string{bundle.TensorFeatures}, nil)
	if err != nil {
		return nil, err
	}
	defer s.Destroy()
	in, err := ort.NewTensor(ort.NewShape(int64(n), 1, 28, 28), batch)
	if err != nil {
		return nil, err
	}
	defer in.Destroy()
	features := make([]float32, n*FeatureDim)
	out, err := ort.NewTensor(ort.NewShape(int64(n), FeatureDim), features)
	if err != nil {
		return nil, err
	}
	defer out.Destroy()
	if err := s.Run([]ort.Value{in}, []ort.Value{out}); err != nil {
		return nil, fmt.Errorf("backbone: %w", err)
	}
	return features, nil
}

// writeBundle exports a model directory of the prototypes protos (class c
// = protos[c], named from data.FashionMNISTClasses) with export.Write, as
// the trainer does.
func writeBundle(dir string, in export.Input, protos []gauss.Gaussian, opts gauss.ClassifierOptions, tasks [][]int) error {
	in.Prototypes = protos
	in.Classifier = opts
	in.Classifier.TopK = TopK
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
