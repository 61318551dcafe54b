package classgraph_test

import (
	"fmt"
	"log"

	"github.com/bicyc/bicyc/export/classgraph"
	"github.com/bicyc/bicyc/export/onnxgraph"
	"github.com/bicyc/bicyc/gauss"
)

// describe prints a model's signature (onnxgraph.Describe).
func describe(model []byte) {
	d, err := onnxgraph.Describe(model)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(d)
}

// A classifier over three classes in two dimensions, reporting the two
// closest classes of each feature.
func ExampleClassifier() {
	tables := gauss.ClassifierTables{
		K: 3, S: 2, Normalize: true,
		Means:  []float32{1, 0, 0, 1, -1, 0},
		Whiten: []float32{1, 0, 0, 1, 2, 0, 0, 2, 1, 0, 0, 1},
		Bias:   []float32{0, 0, 0},
	}
	model, err := classgraph.Classifier(tables)
	if err != nil {
		log.Fatal(err)
	}
	describe(model)
	// Output:
	// input  features[N,2]
	// output scores[N,3]
	// ir 8, opset 17: ReduceL2 Max Div Gemm Reshape Mul ReduceSum Add
}
