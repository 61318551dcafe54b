package export

import (
	"fmt"

	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/safetensors"
)

// Model returns model.onnx, the backbone and classifier fused: input
// "image" [N,C,H,W] -> "scores", "topk_scores", "topk_indices" as in
// Classifier. The classifier's S must equal shape.FeatureDim.
func Model(shape BackboneShape, backbone []safetensors.Tensor, t gauss.ClassifierTables, topK int) ([]byte, error) {
	if t.S != shape.FeatureDim {
		return nil, fmt.Errorf("%w: classifier tables have S=%d but the backbone's feature dim is %d", ErrState, t.S, shape.FeatureDim)
	}
	g := newGraph("bicyc_model")
	image := g.input("image", elemFloat, batchDim, shape.InChannels, shape.Height, shape.Width)
	features, err := addBackbone(g, image, shape, backbone)
	if err != nil {
		return nil, err
	}
	k, err := addClassifier(g, features, t, topK)
	if err != nil {
		return nil, err
	}
	declareScores(g, t.K, k)
	return marshalModel(g.model(fmt.Sprintf("bicyc %s + Gaussian classifier: image [N,%d,%d,%d] -> scores [N,%d], top-%d smallest",
		shape.Arch, shape.InChannels, shape.Height, shape.Width, t.K, k)))
}
