package export

import (
	"fmt"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
)

// DefaultTopK is the number of predictions per image the manifest asks
// readers to report when the caller has no preference; Write records
// min(k, K).
const DefaultTopK = 5

// validateTables checks the table sizes against K and S and that every
// value is finite.
func validateTables(t gauss.ClassifierTables) error {
	if t.K < 1 || t.S < 1 {
		return fmt.Errorf("%w: classifier tables have K=%d classes and S=%d dims, want both >= 1", ErrState, t.K, t.S)
	}
	if err := checkValues("classifier means", t.Means, t.K*t.S); err != nil {
		return err
	}
	if err := checkValues("classifier whiten", t.Whiten, t.K*t.S*t.S); err != nil {
		return err
	}
	return checkValues("classifier bias", t.Bias, t.K)
}

// Classifier returns a self-contained classifier.onnx for the tables of
// gauss.Classifier (t.Tables()), which define the score of class c (smaller
// is closer):
//
//	zh         = z / max(||z||_2, 1e-12)      if t.Normalize, else z
//	score_c(z) = || W_c (zh - m_c) ||^2 + b_c
//
// The model maps input bundle.TensorFeatures [N,S] -> output
// bundle.TensorScores [N,K], column c the score of class c of the tables;
// ranking the scores is the reader's (package infer). The graph evaluates
// the expanded form of gauss.QuadraticTables, all classes in one Gemm whose
// output is the scores themselves:
//
//	u      = zh - center
//	phi    = Concat(Gather(Reshape(u ⊗ u, [N, S*S]), upper pairs), u)   [N, D]
//	scores = Gemm(phi, Coef^T) + Const                                  [N, K]
//
// with D = S(S+1)/2 + S: 2*N*K*D FLOPs, about half of the factored form's
// 2*N*K*S^2, and no [N, K*S] intermediate. ClassifierFiles writes the same
// graph with Coef in a file of its own. Errors wrap ErrState.
func Classifier(t gauss.ClassifierTables) ([]byte, error) {
	if err := validateTables(t); err != nil {
		return nil, err
	}
	return classifierGraph(t.Quadratic(), "")
}

// classifierGraph builds classifier.onnx from q, with Coef as external data
// in location when location is not empty.
func classifierGraph(q gauss.QuadraticTables, location string) ([]byte, error) {
	g := newGraph("bicyc_classifier")
	z := g.input(bundle.TensorFeatures, elemFloat, batchDim, q.S)
	addClassifier(g, z, q, location)
	g.output(bundle.TensorScores, elemFloat, batchDim, q.K)
	return marshalModel(g.model(fmt.Sprintf("bicyc Gaussian classifier: features [N,%d] -> scores [N,%d], smaller is closer", q.S, q.K)))
}

// ClassifierFiles returns the classifier's files of a model directory for
// tables t and the directory's backbone.onnx: classifier.onnx
// (bundle.ClassifierFile, as Classifier), model.onnx (bundle.ModelFile,
// backbone and classifier fused as ModelFromBackbone) and
// bundle.ClassifierDataFile, the [K, D] Coef matrix of
// gauss.QuadraticTables as raw little-endian float32, which both graphs
// read as ONNX external data. The class table is so stored once, and no
// graph comes near protobuf's 2 GB limit however many classes there are.
// Errors wrap ErrState or ErrONNX.
func ClassifierFiles(t gauss.ClassifierTables, backbone []byte) (map[string][]byte, error) {
	if err := validateTables(t); err != nil {
		return nil, err
	}
	q := t.Quadratic()
	files := map[string][]byte{bundle.ClassifierDataFile: float32Bytes(q.Coef)}
	var err error
	if files[bundle.ClassifierFile], err = classifierGraph(q, bundle.ClassifierDataFile); err != nil {
		return nil, err
	}
	if files[bundle.ModelFile], err = fuseClassifier(backbone, q, bundle.ClassifierDataFile); err != nil {
		return nil, err
	}
	return files, nil
}

// addClassifier appends the scoring graph of q to g, reading features z
// [N,S] and writing bundle.TensorScores. With location set, Coef is
// external data in that file.
func addClassifier(g *graph, z string, q gauss.QuadraticTables, location string) {
	s := q.S
	if q.Normalize {
		norm := g.op("ReduceL2", "classifier.norm", []string{z}, attrInts("axes", 1), attrInt("keepdims", 1))
		eps := g.floats("classifier.norm_eps", nil, []float32{gauss.NormEpsilon})
		norm = g.op("Max", "classifier.norm_clamped", []string{norm, eps})
		z = g.op("Div", "classifier.features_normalized", []string{z, norm})
	}
	u := g.op("Sub", "classifier.centered", []string{z, g.floats("classifier.center", []int{s}, q.Center)})
	col := g.op("Unsqueeze", "classifier.centered_column", []string{u, g.ints("classifier.axis_2", []int{1}, 2)})
	row := g.op("Unsqueeze", "classifier.centered_row", []string{u, g.ints("classifier.axis_1", []int{1}, 1)})
	outer := g.op("Mul", "classifier.outer", []string{col, row})
	outer = g.op("Reshape", "classifier.outer_flat", []string{outer, g.ints("classifier.outer_shape", []int{2}, -1, int64(s*s))})
	pairs := gauss.UpperPairs(s)
	upper := g.op("Gather", "classifier.outer_upper", []string{outer, g.ints("classifier.upper_pairs", []int{len(pairs)}, pairs...)}, attrInt("axis", 1))
	phi := g.op("Concat", "classifier.quadratic_features", []string{upper, u}, attrInt("axis", 1))
	shape := []int{q.K, gauss.QuadraticDim(s)}
	var coef string
	if location == "" {
		coef = g.floats("classifier.coef", shape, q.Coef)
	} else {
		coef = g.external("classifier.coef", shape, location, int64(4*len(q.Coef)))
	}
	g.op("Gemm", bundle.TensorScores, []string{phi, coef, g.floats("classifier.const", []int{q.K}, q.Const)}, attrInt("transB", 1))
}
