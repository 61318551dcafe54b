package bundle_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/imaging"
)

// A model directory with one task of two classes in two dimensions; the
// ONNX files are placeholders here (package export writes real ones).
func Example() {
	tmp, err := os.MkdirTemp("", "bicyc-bundle-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "model")

	// Identity covariances, packed as upper triangles [1 0 1].
	protos := bundle.Prototypes{K: 2, S: 2,
		Means:       []float32{1, 0, 0, 1},
		Covariances: []float32{1, 0, 1, 1, 0, 1},
		Bias:        []float32{0, 0}, Normalize: true,
	}
	protoBytes, err := protos.Encode()
	if err != nil {
		log.Fatal(err)
	}
	m := &bundle.Manifest{
		Backbone: "convnet", FeatureDim: 2,
		Classifier: gauss.ClassifierOptions{Normalize: true, Shrink: 3, TopK: 2},
		Preprocess: imaging.Preprocess{Channels: 1, Height: 28, Width: 28, Mean: []float32{0.286}, Std: []float32{0.353}},
		Classes:    []bundle.Class{{ID: 0, Name: "T-shirt/top", Task: 1}, {ID: 1, Name: "Trouser", Task: 1}},
		Tasks:      [][]int{{0, 1}},
	}
	files := map[string][]byte{
		bundle.BackboneFile: []byte("..."), bundle.ClassifierFile: []byte("..."),
		bundle.ModelFile: []byte("..."), bundle.PrototypesFile: protoBytes,
	}
	if err := bundle.Write(dir, m, files); err != nil {
		log.Fatal(err)
	}

	b, err := bundle.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("schema", b.Manifest.SchemaVersion, "classes", b.Prototypes.K, "dim", b.Prototypes.S)
	for _, c := range b.Manifest.Classes {
		fmt.Printf("class %d %q task %d\n", c.ID, c.Name, c.Task)
	}
	fmt.Println("adapter:", b.Has(bundle.AdapterFile), "model:", filepath.Base(b.Path(bundle.ModelFile)))
	// Output:
	// schema 6 classes 2 dim 2
	// class 0 "T-shirt/top" task 1
	// class 1 "Trouser" task 1
	// adapter: false model: model.onnx
}
