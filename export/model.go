package export

import (
	"fmt"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/safetensors"
)

// Model returns model.onnx, the backbone and classifier fused: input
// bundle.TensorImage [N,C,H,W] -> bundle.TensorScores [N,K] as in
// Classifier. The classifier's S must equal shape.FeatureDim.
func Model(shape BackboneShape, backbone []safetensors.Tensor, t gauss.ClassifierTables) ([]byte, error) {
	if t.S != shape.FeatureDim {
		return nil, fmt.Errorf("%w: classifier tables have S=%d but the backbone's feature dim is %d", ErrState, t.S, shape.FeatureDim)
	}
	g := newGraph("bicyc_model")
	image := g.input(bundle.TensorImage, elemFloat, batchDim, shape.InChannels, shape.Height, shape.Width)
	features, err := addBackbone(g, image, shape, backbone)
	if err != nil {
		return nil, err
	}
	if err := validateTables(t); err != nil {
		return nil, err
	}
	newScoring(t).add(g, features, "")
	g.output(bundle.TensorScores, elemFloat, batchDim, t.K)
	return marshalModel(g.model(fmt.Sprintf("bicyc %s + Gaussian classifier: image [N,%d,%d,%d] -> scores [N,%d], smaller is closer",
		shape.Arch, shape.InChannels, shape.Height, shape.Width, t.K)))
}
