package export

import (
	"errors"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/export/classgraph"
	"github.com/bicyc/bicyc/export/onnxpb"
)

// TestModelFromBackboneMatchesModel: extending backbone.onnx with a
// classifier gives the same graph as Model built from the weights.
func TestModelFromBackboneMatchesModel(t *testing.T) {
	shape := BackboneShape{Arch: arch.ConvNet, InChannels: 1, Height: 8, Width: 8, FeatureDim: 4}
	rng := rand.New(rand.NewPCG(7, 8))
	weights := randomConvNet(rng, 1, 4)
	backbone, err := Backbone(shape, weights)
	if err != nil {
		t.Fatal(err)
	}
	tables := randomTables(rng, 3, 4, true)
	want, err := Model(shape, weights, tables)
	if err != nil {
		t.Fatal(err)
	}
	got, err := classgraph.ModelFromBackbone(backbone, tables)
	if err != nil {
		t.Fatal(err)
	}
	var a, b onnxpb.ModelProto
	if err := proto.Unmarshal(want, &a); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(got, &b); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(a.GetGraph(), b.GetGraph()) {
		t.Fatal("graph of classgraph.ModelFromBackbone differs from Model's")
	}
	for i, bad := range [][]byte{[]byte("not onnx"), want} {
		if _, err := classgraph.ModelFromBackbone(bad, tables); !errors.Is(err, classgraph.ErrONNX) {
			t.Errorf("case %d: error %v, want classgraph.ErrONNX", i, err)
		}
	}
	if _, err := classgraph.ModelFromBackbone(backbone, randomTables(rng, 3, 5, true)); !errors.Is(err, classgraph.ErrTables) {
		t.Errorf("tables of another dim: error %v, want ErrTables", err)
	}
}
