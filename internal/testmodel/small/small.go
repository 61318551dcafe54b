// Package small builds the small real model the tests of serve and
// cmd/bicyc-infer serve: a random convnet over Fashion-MNIST (1x28x28, 4
// features) with prototypes of three classes (top_k 2, two tasks)
// estimated from the backbone's features of real test images through
// infer, exported with package export. Package testmodel, beside it, builds
// the larger models of infer's own tests without importing infer. Only
// tests, examples and benchmarks import it.
package small

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/export"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/safetensors"
)

const (
	featureDim = 4
	classes    = 3
	// PerClass is the number of each class's first test images the
	// prototypes are estimated from; later ones are held out.
	PerClass = 20
)

var (
	once sync.Once
	dir  string
	set  *data.Dataset
	err  error
)

// Get returns the model directory and the Fashion-MNIST test set, building
// the model once per test binary. A missing ONNX Runtime library fails the
// test: the test command installs it. Cleanup removes the model.
func Get(t testing.TB) (string, *data.Dataset) {
	t.Helper()
	once.Do(func() { dir, set, err = build() })
	if err != nil {
		t.Fatalf("building the test model: %v", err)
	}
	return dir, set
}

// Dir returns the model directory, building it once per process, for
// examples, which have no testing.TB.
func Dir() (string, error) {
	once.Do(func() { dir, set, err = build() })
	return dir, err
}

// BackboneFile returns the model's backbone weights as a training
// checkpoint's backbone.safetensors holds them (tensor names of package
// models' convnet; metadata arch, in_channels and feature_dim), written
// beside the model directory when it is built: what the PyTorch side of
// bench/infer loads to run the same network.
func BackboneFile() (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(d), "backbone.safetensors"), nil
}

// Cleanup removes the model Get built, if any; a TestMain calls it after
// the tests.
func Cleanup() {
	if dir != "" {
		os.RemoveAll(filepath.Dir(dir))
	}
}

// FashionImage returns test image i of d.
func FashionImage(d *data.Dataset, i int) image.Image {
	return &image.Gray{Pix: d.Image(i), Stride: d.Width, Rect: image.Rect(0, 0, d.Width, d.Height)}
}

// EncodePNG encodes img as PNG.
func EncodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// EqualResults compares two results' classes and distances (1e-6
// relative).
func EqualResults(a, b infer.Result) bool {
	if len(a.Predictions) != len(b.Predictions) {
		return false
	}
	for i, p := range a.Predictions {
		q := b.Predictions[i]
		if p.ClassID != q.ClassID || p.Name != q.Name || p.Task != q.Task ||
			float64(abs32(p.Distance-q.Distance)) > 1e-6*max(1, float64(abs32(q.Distance))) {
			return false
		}
	}
	return true
}

func abs32(v float32) float32 { return max(v, -v) }

// build exports the model twice with export.Write: first with
// unit prototypes, to compute the backbone's features through
// infer.Classifier.Embed, then with the class Gaussians of those features.
func build() (string, *data.Dataset, error) {
	root, err := os.MkdirTemp("", "bicyc-infer-test-")
	if err != nil {
		return "", nil, err
	}
	dir := filepath.Join(root, "model")
	fm := data.FashionMNISTDir
	test, err := data.LoadIDX(filepath.Join(fm, "t10k-images-idx3-ubyte.gz"), filepath.Join(fm, "t10k-labels-idx1-ubyte.gz"))
	if err != nil {
		return "", nil, err
	}
	mean, std := data.DefaultNormalization(data.KindFashionMNIST)
	in := export.Input{
		Arch: arch.ConvNet, FeatureDim: featureDim, Backbone: randomConvNet(rand.New(rand.NewPCG(3, 4)), featureDim),
		Classifier: gauss.ClassifierOptions{Normalize: true, Shrink: 3, TopK: 2},
		Tasks:      [][]int{{0, 1}, {2}},
		Preprocess: imaging.Preprocess{Channels: 1, Height: 28, Width: 28, Mean: mean, Std: std, Resize: imaging.ResizeCatmullRom},
		Version:    "test",
	}
	for id := range classes {
		in.Classes = append(in.Classes, bundle.Class{ID: id, Name: data.FashionMNISTClasses[id], Task: min(id/2, 1) + 1})
	}
	unit := make([]gauss.Gaussian, classes)
	for c := range unit {
		unit[c] = gauss.Gaussian{Mean: make([]float64, featureDim), Cov: identity(featureDim)}
		unit[c].Mean[c] = 1
	}
	if err := writeModel(dir, in, unit); err != nil {
		return "", nil, err
	}
	meta := map[string]string{"arch": string(in.Arch), "in_channels": fmt.Sprint(in.Preprocess.Channels), "feature_dim": fmt.Sprint(featureDim)}
	if err := safetensors.WriteFile(filepath.Join(root, "backbone.safetensors"), in.Backbone, meta); err != nil {
		return "", nil, err
	}
	c, err := infer.Open(context.Background(), dir, infer.WithProvider(infer.ProviderCPU), infer.WithLog(nil))
	if err != nil {
		return "", nil, err
	}
	defer c.Close()
	protos := make([]gauss.Gaussian, classes)
	for cls := range protos {
		var imgs []image.Image
		for i, y := range test.Labels {
			if y == cls && len(imgs) < PerClass {
				imgs = append(imgs, FashionImage(test, i))
			}
		}
		features, err := c.Embed(context.Background(), imgs)
		if err != nil {
			return "", nil, err
		}
		flat := make([]float32, 0, len(features)*featureDim)
		for _, f := range features {
			flat = append(flat, f...)
		}
		if protos[cls], err = gauss.Estimate(flat, len(features), featureDim); err != nil {
			return "", nil, err
		}
	}
	return dir, test, writeModel(dir, in, protos)
}

func writeModel(dir string, in export.Input, protos []gauss.Gaussian) error {
	in.Prototypes = protos
	return export.Write(dir, in)
}

func identity(n int) *mat.SymDense {
	m := mat.NewSymDense(n, nil)
	for i := range n {
		m.SetSym(i, i, 1)
	}
	return m
}

// randomConvNet draws the convnet backbone's tensors (names and shapes as
// export.Backbone documents them), He-scaled, with identity batch norms.
func randomConvNet(rng *rand.Rand, s int) []safetensors.Tensor {
	var ts []safetensors.Tensor
	tensor := func(name string, shape []int, std, fill float64) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(fill + rng.NormFloat64()*std)
		}
		ts = append(ts, safetensors.Tensor{Name: name, Shape: shape, Data: v})
	}
	in := 1
	for l, out := range []int{32, 64, 128} {
		tensor(fmt.Sprintf("conv%d.weight", l+1), []int{out, in, 3, 3}, math.Sqrt(2/float64(in*9)), 0)
		tensor(fmt.Sprintf("bn%d.weight", l+1), []int{out}, 0, 1)
		tensor(fmt.Sprintf("bn%d.bias", l+1), []int{out}, 0, 0)
		tensor(fmt.Sprintf("bn%d.running_mean", l+1), []int{out}, 0, 0)
		tensor(fmt.Sprintf("bn%d.running_var", l+1), []int{out}, 0, 1)
		in = out
	}
	tensor("reduce.weight", []int{s, 128, 1, 1}, math.Sqrt(2/128.0), 0)
	tensor("reduce.bias", []int{s}, 0, 0)
	return ts
}
