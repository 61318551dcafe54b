package classgraph

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/export/onnxgraph"
	"github.com/bicyc/bicyc/export/onnxpb"
	"github.com/bicyc/bicyc/gauss"
)

// ErrONNX is wrapped by errors about an ONNX file that ModelFromBackbone
// cannot extend: not a model, another opset, no "image" input or
// "features" output.
var ErrONNX = errors.New("unusable onnx model")

// ModelFromBackbone returns model.onnx for an exported backbone.onnx (as
// Backbone writes it) and new classifier tables: the backbone's graph, left
// as it is, followed by the classifier of Classifier, so the fused model
// scores exactly like backbone.onnx followed by classifier.onnx; its
// second output is the backbone's bundle.TensorFeatures. It is how
// a model directory gets new classes without the training weights
// (author.AddClasses). The tables' S must be the backbone's feature dim. Errors
// wrap ErrONNX or ErrTables.
func ModelFromBackbone(backbone []byte, t gauss.ClassifierTables) ([]byte, error) {
	if err := validateTables(t); err != nil {
		return nil, err
	}
	return fuseClassifier(backbone, newScoring(t), "")
}

// fuseClassifier appends the classifier graph of sc to backbone.onnx, with
// its table as external data in location when location is not empty.
func fuseClassifier(backbone []byte, sc scoring, location string) ([]byte, error) {
	t := sc.t
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(backbone, &m); err != nil {
		return nil, fmt.Errorf("%w: backbone: %v", ErrONNX, err)
	}
	src := m.GetGraph()
	if len(m.GetOpsetImport()) != 1 || m.GetOpsetImport()[0].GetVersion() != onnxgraph.OpsetVersion || src == nil {
		return nil, fmt.Errorf("%w: backbone: not a bicyc backbone of opset %d", ErrONNX, onnxgraph.OpsetVersion)
	}
	if len(src.GetInput()) != 1 || src.GetInput()[0].GetName() != bundle.TensorImage ||
		len(src.GetOutput()) != 1 || src.GetOutput()[0].GetName() != bundle.TensorFeatures {
		return nil, fmt.Errorf("%w: backbone: want one input %q and one output %q", ErrONNX, bundle.TensorImage, bundle.TensorFeatures)
	}
	if dims := src.GetOutput()[0].GetType().GetTensorType().GetShape().GetDim(); len(dims) != 2 || dims[1].GetDimValue() != int64(t.S) {
		return nil, fmt.Errorf("%w: backbone features are not [N,%d], the classifier tables' dim", ErrTables, t.S)
	}
	g := onnxgraph.Extend("bicyc_model", src)
	if !g.Has(bundle.TensorFeatures) {
		return nil, fmt.Errorf("%w: backbone: no node computes %q", ErrONNX, bundle.TensorFeatures)
	}
	sc.add(g, bundle.TensorFeatures, location)
	g.Output(bundle.TensorScores, onnxgraph.Float, onnxgraph.BatchDim, t.K)
	// The feature too, so that a reader of both runs the backbone once
	// (bundle.Manifest.ModelFeatures).
	g.Output(bundle.TensorFeatures, onnxgraph.Float, onnxgraph.BatchDim, t.S)
	return onnxgraph.Marshal(g.Model(fmt.Sprintf("%s + Gaussian classifier: image -> scores [N,%d], smaller is closer, and features [N,%d]", src.GetName(), t.K, t.S)))
}
