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

// Classifier returns classifier.onnx for the tables of gauss.Classifier
// (t.Tables()), which define the score of class c (smaller is closer):
//
//	zh         = z / max(||z||_2, 1e-12)      if t.Normalize, else z
//	score_c(z) = || W_c (zh - m_c) ||^2 + b_c
//
// The model maps input bundle.TensorFeatures [N,S] -> output
// bundle.TensorScores [N,K], column c the score of class c of the tables;
// ranking the scores is the reader's (package infer). The graph evaluates
// all classes with one Gemm:
//
//	y      = zh Wall^T - vec(W_c m_c)     Wall = W stacked to [K*S, S]
//	scores = ReduceSum_S(Reshape(y, [N,K,S])^2) + b
//
// Errors wrap ErrState.
func Classifier(t gauss.ClassifierTables) ([]byte, error) {
	g := newGraph("bicyc_classifier")
	z := g.input(bundle.TensorFeatures, elemFloat, batchDim, t.S)
	if err := addClassifier(g, z, t); err != nil {
		return nil, err
	}
	g.output(bundle.TensorScores, elemFloat, batchDim, t.K)
	return marshalModel(g.model(fmt.Sprintf("bicyc Gaussian classifier: features [N,%d] -> scores [N,%d], smaller is closer", t.S, t.K)))
}

// addClassifier appends the scoring graph to g, reading features z [N,S]
// and writing bundle.TensorScores.
func addClassifier(g *graph, z string, t gauss.ClassifierTables) error {
	if err := validateTables(t); err != nil {
		return err
	}
	if t.Normalize {
		norm := g.op("ReduceL2", "classifier.norm", []string{z}, attrInts("axes", 1), attrInt("keepdims", 1))
		eps := g.floats("classifier.norm_eps", nil, []float32{gauss.NormEpsilon})
		norm = g.op("Max", "classifier.norm_clamped", []string{norm, eps})
		z = g.op("Div", "classifier.features_normalized", []string{z, norm})
	}
	// offset[c,i] = sum_j W_c[i,j] m_c[j], in float64 so the subtraction in
	// the graph is the only float32 rounding of the mean term.
	offset := make([]float32, t.K*t.S)
	for c := range t.K {
		for i := range t.S {
			row := t.Whiten[(c*t.S+i)*t.S : (c*t.S+i+1)*t.S]
			mean := t.Means[c*t.S : (c+1)*t.S]
			var sum float64
			for j, w := range row {
				sum += float64(w) * float64(mean[j])
			}
			offset[c*t.S+i] = float32(-sum)
		}
	}
	w := g.floats("classifier.whiten", []int{t.K * t.S, t.S}, t.Whiten)
	off := g.floats("classifier.neg_whitened_means", []int{t.K * t.S}, offset)
	y := g.op("Gemm", "classifier.whitened", []string{z, w, off}, attrInt("transB", 1))
	y = g.op("Reshape", "classifier.whitened_per_class", []string{y, g.ints("classifier.per_class_shape", []int{3}, -1, int64(t.K), int64(t.S))})
	sq := g.op("Mul", "classifier.squared", []string{y, y})
	sum := g.op("ReduceSum", "classifier.distance", []string{sq, g.ints("classifier.sum_axes", []int{1}, 2)}, attrInt("keepdims", 0))
	g.op("Add", bundle.TensorScores, []string{sum, g.floats("classifier.bias", []int{t.K}, t.Bias)})
	return nil
}
