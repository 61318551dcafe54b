package export

import (
	"fmt"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/export/classgraph"
	"github.com/bicyc/bicyc/export/onnxgraph"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/safetensors"
)

// Model returns model.onnx, the backbone and classifier fused: input
// bundle.TensorImage [N,C,H,W] -> bundle.TensorScores [N,K] as in
// Classifier, and the backbone's bundle.TensorFeatures [N,S]. The classifier's S must equal shape.FeatureDim.
func Model(shape BackboneShape, backbone []safetensors.Tensor, t gauss.ClassifierTables) ([]byte, error) {
	if t.S != shape.FeatureDim {
		return nil, fmt.Errorf("%w: classifier tables have S=%d but the backbone's feature dim is %d", ErrState, t.S, shape.FeatureDim)
	}
	g := onnxgraph.New("bicyc_model")
	image := g.Input(bundle.TensorImage, onnxgraph.Float, onnxgraph.BatchDim, shape.InChannels, shape.Height, shape.Width)
	features, err := addBackbone(g, image, shape, backbone)
	if err != nil {
		return nil, err
	}
	if err := classgraph.Append(g, features, t); err != nil {
		return nil, err
	}
	g.Output(features, onnxgraph.Float, onnxgraph.BatchDim, t.S)
	return onnxgraph.Marshal(g.Model(fmt.Sprintf("bicyc %s + Gaussian classifier: image [N,%d,%d,%d] -> scores [N,%d], smaller is closer",
		shape.Arch, shape.InChannels, shape.Height, shape.Width, t.K)))
}
