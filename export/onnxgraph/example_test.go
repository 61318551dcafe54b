package onnxgraph_test

import (
	"fmt"
	"log"

	"github.com/bicyc/bicyc/export/onnxgraph"
)

// A linear layer over a batch of 2-vectors, written and then described.
func ExampleDescribe() {
	g := onnxgraph.New("linear")
	x := g.Input("x", onnxgraph.Float, onnxgraph.BatchDim, 2)
	w := g.Floats("w", []int{3, 2}, []float32{1, 0, 0, 1, 1, 1})
	g.Op("Gemm", "y", []string{x, w}, onnxgraph.AttrInt("transB", 1))
	g.Output("y", onnxgraph.Float, onnxgraph.BatchDim, 3)
	model, err := onnxgraph.Marshal(g.Model("a linear layer"))
	if err != nil {
		log.Fatal(err)
	}
	d, err := onnxgraph.Describe(model)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(d)
	// Output:
	// input  x[N,2]
	// output y[N,3]
	// ir 8, opset 17: Gemm
}
