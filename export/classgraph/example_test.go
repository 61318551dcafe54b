package classgraph_test

import (
	"fmt"
	"log"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/bicyc/bicyc/export/classgraph"
	"github.com/bicyc/bicyc/export/onnxpb"
	"github.com/bicyc/bicyc/gauss"
)

// describe prints a model's inputs, outputs, versions and operators.
func describe(model []byte) {
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(model, &m); err != nil {
		log.Fatal(err)
	}
	shape := func(v *onnxpb.ValueInfoProto) string {
		var dims []string
		for _, d := range v.GetType().GetTensorType().GetShape().GetDim() {
			if d.GetDimParam() != "" {
				dims = append(dims, d.GetDimParam())
			} else {
				dims = append(dims, fmt.Sprint(d.GetDimValue()))
			}
		}
		return v.GetName() + "[" + strings.Join(dims, ",") + "]"
	}
	for _, v := range m.GetGraph().GetInput() {
		fmt.Println("input ", shape(v))
	}
	for _, v := range m.GetGraph().GetOutput() {
		fmt.Println("output", shape(v))
	}
	var ops []string
	for _, n := range m.GetGraph().GetNode() {
		ops = append(ops, n.GetOpType())
	}
	fmt.Printf("ir %d, opset %d: %s\n", m.GetIrVersion(), m.GetOpsetImport()[0].GetVersion(), strings.Join(ops, " "))
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
