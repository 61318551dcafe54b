package export_test

import (
	"fmt"
	"log"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/export"
	"github.com/bicyc/bicyc/export/onnxgraph"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/safetensors"
)

// describe prints a model's signature (onnxgraph.Describe).
func describe(model []byte) {
	d, err := onnxgraph.Describe(model)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(d)
}

// zeroConvNet is a convnet state dict of zeros with unit BatchNorm
// variance, standing in for trained weights.
func zeroConvNet(s int) []safetensors.Tensor {
	var state []safetensors.Tensor
	add := func(name string, fill float32, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		data := make([]float32, n)
		for i := range data {
			data[i] = fill
		}
		state = append(state, safetensors.Tensor{Name: name, Shape: shape, Data: data})
	}
	in := 1
	for i, out := range []int{32, 64, 128} {
		add(fmt.Sprintf("conv%d.weight", i+1), 0, out, in, 3, 3)
		add(fmt.Sprintf("bn%d.weight", i+1), 1, out)
		add(fmt.Sprintf("bn%d.bias", i+1), 0, out)
		add(fmt.Sprintf("bn%d.running_mean", i+1), 0, out)
		add(fmt.Sprintf("bn%d.running_var", i+1), 1, out)
		in = out
	}
	add("reduce.weight", 0, s, 128, 1, 1)
	add("reduce.bias", 0, s)
	return state
}

// The Fashion-MNIST backbone: 28x28 grayscale in, 64 features out.
func ExampleBackbone() {
	shape := export.BackboneShape{Arch: arch.ConvNet, InChannels: 1, Height: 28, Width: 28, FeatureDim: 64}
	model, err := export.Backbone(shape, zeroConvNet(64))
	if err != nil {
		log.Fatal(err)
	}
	describe(model)
	// Output:
	// input  image[N,1,28,28]
	// output features[N,64]
	// ir 8, opset 17: Conv Relu MaxPool Conv Relu MaxPool Conv Relu Conv GlobalAveragePool Reshape
}

// Exporting a model after its first task (so without an adapter) and
// opening the directory as inference does.
func ExampleWrite() {
	tmp, err := os.MkdirTemp("", "bicyc-export-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "fmnist")

	const s = 2
	unit := func(i int) gauss.Gaussian {
		g := gauss.Gaussian{Mean: make([]float64, s), Cov: mat.NewSymDense(s, []float64{1, 0, 0, 1})}
		g.Mean[i] = 1
		return g
	}
	in := export.Input{
		Arch: arch.ConvNet, FeatureDim: s, Backbone: zeroConvNet(s),
		Prototypes: []gauss.Gaussian{unit(0), unit(1)},
		Classifier: gauss.ClassifierOptions{Normalize: true, Shrink: 3},
		Classes:    []bundle.Class{{ID: 0, Name: "T-shirt/top", Task: 1}, {ID: 1, Name: "Trouser", Task: 1}},
		Tasks:      [][]int{{0, 1}},
		Preprocess: imaging.Preprocess{Channels: 1, Height: 28, Width: 28, Mean: []float32{0.2860}, Std: []float32{0.3530}},
	}
	if err := export.Write(dir, in); err != nil {
		log.Fatal(err)
	}
	b, err := bundle.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(b.Manifest.Files)) {
		fmt.Println(name)
	}
	fmt.Println("top_k:", b.Manifest.Classifier.TopK)
	// Output:
	// backbone.onnx
	// classifier.data
	// classifier.onnx
	// model.onnx
	// prototypes.safetensors
	// top_k: 2
}
