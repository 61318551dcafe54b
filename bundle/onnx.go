package bundle

// Tensor names of the ONNX models of a model directory: the inputs and
// outputs export writes and infer feeds and fetches.
//
//	backbone.onnx    TensorImage [N,C,H,W] -> TensorFeatures [N,S]
//	adapter.onnx     TensorFeaturesOld [N,S] -> TensorFeatures [N,S]
//	classifier.onnx  TensorFeatures [N,S] -> TensorScores [N,K]
//	model.onnx       TensorImage [N,C,H,W] -> TensorScores [N,K]
//	                 (and TensorFeatures [N,S] where Manifest.ModelFeatures)
//	shortlist.onnx   TensorFeatures [N,S] -> TensorShortlistClasses [N,n] (int64),
//	                 TensorShortlistScores [N,n], TensorApproximateScores [N,K]
//
// Scores are squared Mahalanobis distances (plus the full-Gaussian bias
// when the classifier has one), smaller is closer; column c is Classes[c]
// of the manifest. Ranking them is the reader's (infer ranks by score, ties
// by class index).
const (
	TensorImage       = "image"
	TensorFeatures    = "features"
	TensorFeaturesOld = "features_old"
	TensorScores      = "scores"
	// TensorShortlistClasses are the columns of the scores of the n
	// classes a shortlist scores exactly, best approximate score first.
	TensorShortlistClasses = "shortlist_classes"
	// TensorShortlistScores are those n classes' exact scores, as
	// TensorScores holds them.
	TensorShortlistScores = "shortlist_scores"
	// TensorApproximateScores are every class's int8 approximation of its
	// score, from which the shortlist was picked.
	TensorApproximateScores = "approximate_scores"
)

// MinRuntimeVersion is the oldest ONNX Runtime release that reads a model
// directory with package infer, written into every manifest: infer runs
// ONNX Runtime through onnxruntime_go v1.27.0, which needs its C API
// version 24, first served by ONNX Runtime 1.24 (docs/toolchain.md, "ONNX
// Runtime"). The ONNX files alone (opset 17) would run on 1.13 and later.
const MinRuntimeVersion = "1.24.0"
