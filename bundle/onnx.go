package bundle

// Tensor names of the ONNX models of a model directory: the inputs and
// outputs export writes and infer feeds and fetches.
//
//	backbone.onnx    TensorImage [N,C,H,W] -> TensorFeatures [N,S]
//	adapter.onnx     TensorFeaturesOld [N,S] -> TensorFeatures [N,S]
//	classifier.onnx  TensorFeatures [N,S] -> TensorScores [N,K]
//	model.onnx       TensorImage [N,C,H,W] -> TensorScores [N,K]
//
// classifier.onnx and model.onnx of more than ShortlistSize classes (schema
// version 5 on) have a second output, TensorScoresShortlist [N,K]: the
// same scores for the ShortlistSize classes a cheaper score ranks first,
// and for every other class max(its cheaper score, the largest of those
// exact scores), so it never ranks before a shortlisted class. ONNX
// Runtime computes only the outputs asked for.
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
	// TensorScoresShortlist is the approximate scores output (see above).
	TensorScoresShortlist = "scores_shortlist"
)

// MinRuntimeVersion is the oldest ONNX Runtime release that reads a model
// directory with package infer, written into every manifest: infer runs
// ONNX Runtime through onnxruntime_go v1.27.0, which needs its C API
// version 24, first served by ONNX Runtime 1.24 (docs/toolchain.md, "ONNX
// Runtime"). The ONNX files alone (opset 17) would run on 1.13 and later.
const MinRuntimeVersion = "1.24.0"

// ShortlistSize is how many classes the TensorScoresShortlist output
// scores exactly: docs/inference.md gives its measured agreement with the
// exact scores.
const ShortlistSize = 64
