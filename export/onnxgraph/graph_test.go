package onnxgraph

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/bicyc/bicyc/export/onnxpb"
)

// TestGraphBuildsAndExtends: a small graph marshals to the same bytes every
// time, with its versions, and Extend continues it under its own names.
func TestGraphBuildsAndExtends(t *testing.T) {
	build := func() []byte {
		g := New("g")
		x := g.Input("x", Float, BatchDim, 2)
		w := g.Floats("w", []int{2, 2}, []float32{1, 2, 3, 4})
		g.Op("Gemm", "y", []string{x, w}, AttrInt("transB", 1))
		g.Output("y", Float, BatchDim, 2)
		b, err := Marshal(g.Model("test"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := build()
	if !bytes.Equal(a, build()) {
		t.Fatal("the same graph marshals to different bytes")
	}
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(a, &m); err != nil {
		t.Fatal(err)
	}
	if m.GetIrVersion() != IRVersion || m.GetOpsetImport()[0].GetVersion() != OpsetVersion || len(m.GetGraph().GetNode()) != 1 {
		t.Fatalf("model %v", &m)
	}
	g := Extend("h", m.GetGraph())
	if !g.Has("x") || !g.Has("w") || !g.Has("y") || g.Has("z") {
		t.Fatal("Extend lost a value of the graph")
	}
	g.Op("Relu", "z", []string{"y"})
	if names := g.Model("").GetGraph().GetNode(); len(names) != 2 || names[1].GetName() != "Relu_1" {
		t.Fatalf("nodes %v", names)
	}
}

// TestGraphPanicsOnMisuse: names used twice, inputs not yet defined and
// data that disagrees with its shape are bugs of the caller.
func TestGraphPanicsOnMisuse(t *testing.T) {
	for i, f := range []func(g *Graph){
		func(g *Graph) { g.Input("x", Float, 1); g.Input("x", Float, 1) },
		func(g *Graph) { g.Op("Relu", "y", []string{"missing"}) },
		func(g *Graph) { g.Floats("w", []int{2}, []float32{1}) },
		func(g *Graph) { g.Output("nothing", Float, 1) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(r.(string), "onnxgraph: ") {
					t.Errorf("case %d: panic %v, want an onnxgraph: message", i, r)
				}
			}()
			f(New("g"))
		}()
	}
}

// TestDescribeRefusesWhatIsNoModel: bytes that are no ONNX model give an error, not a signature.
func TestDescribeRefusesWhatIsNoModel(t *testing.T) {
	if d, err := Describe([]byte("not a model")); err == nil {
		t.Fatalf("Describe of text: %q, no error", d)
	}
}
