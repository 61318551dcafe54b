package export

import (
	"fmt"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
)

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

// ExpandedMinClasses is the class count from which the graphs score with
// the expanded form (gauss.QuadraticTables); below it they keep the
// factored form, whose fewer operators cost less than building the
// quadratic features when the classes are few (measured: at 10 classes the
// factored model answered in 159 us of CPU per image against 178 us, at
// 100 classes the expanded one in 196 us against 227 us;
// docs/results/inference-classes.md).
const ExpandedMinClasses = 64

// Classifier returns a self-contained classifier.onnx for the tables of
// gauss.Classifier (t.Tables()), which define the score of class c (smaller
// is closer):
//
//	zh         = z / max(||z||_2, 1e-12)      if t.Normalize, else z
//	score_c(z) = || W_c (zh - m_c) ||^2 + b_c
//
// The model maps input bundle.TensorFeatures [N,S] -> output
// bundle.TensorScores [N,K], column c the score of class c of the tables;
// ranking the scores is the reader's (package infer). From
// ExpandedMinClasses classes on, the graph evaluates the expanded form of
// gauss.QuadraticTables, all classes in one Gemm whose output is the
// scores themselves:
//
//	u      = zh - center
//	phi    = Concat(Gather(Reshape(u ⊗ u, [N, S*S]), upper pairs), u)   [N, D]
//	scores = Gemm(phi, Coef^T) + Const                                  [N, K]
//
// with D = S(S+1)/2 + S: 2*N*K*D FLOPs, about half of the factored form's
// 2*N*K*S^2, and no [N, K*S] intermediate. Below it, the factored form:
//
//	y      = zh Wall^T - vec(W_c m_c)     Wall = W stacked to [K*S, S]
//	scores = ReduceSum_S(Reshape(y, [N,K,S])^2) + b
//
// ClassifierFiles writes the same graph with its table (Coef or Wall) in a
// file of its own. Errors wrap ErrState.
func Classifier(t gauss.ClassifierTables) ([]byte, error) {
	if err := validateTables(t); err != nil {
		return nil, err
	}
	return classifierGraph(newScoring(t), "")
}

// scoring is the form a graph evaluates the tables t in: the expanded
// form q, or the factored form of t itself when q is nil.
type scoring struct {
	t gauss.ClassifierTables
	q *gauss.QuadraticTables
}

// newScoring picks the form by the class count (ExpandedMinClasses).
func newScoring(t gauss.ClassifierTables) scoring {
	if t.K < ExpandedMinClasses {
		return scoring{t: t}
	}
	q := t.Quadratic()
	return scoring{t: t, q: &q}
}

// table returns the form's large table, the content of
// bundle.ClassifierDataFile: Coef [K, D], or Wall [K*S, S].
func (sc scoring) table() []float32 {
	if sc.q != nil {
		return sc.q.Coef
	}
	return sc.t.Whiten
}

// classifierGraph builds classifier.onnx of sc, with its table as external
// data in location when location is not empty.
func classifierGraph(sc scoring, location string) ([]byte, error) {
	g := newGraph("bicyc_classifier")
	z := g.input(bundle.TensorFeatures, elemFloat, batchDim, sc.t.S)
	sc.add(g, z, location)
	g.output(bundle.TensorScores, elemFloat, batchDim, sc.t.K)
	return marshalModel(g.model(fmt.Sprintf("bicyc Gaussian classifier: features [N,%d] -> scores [N,%d], smaller is closer", sc.t.S, sc.t.K)))
}

// ClassifierFiles returns the classifier's files of a model directory for
// tables t and the directory's backbone.onnx: classifier.onnx
// (bundle.ClassifierFile, as Classifier), model.onnx (bundle.ModelFile,
// backbone and classifier fused as ModelFromBackbone) and
// bundle.ClassifierDataFile, the graphs' table (the [K, D] Coef matrix of
// gauss.QuadraticTables, or the [K*S, S] stacked W_c below
// ExpandedMinClasses classes) as raw little-endian float32, which both
// graphs read as ONNX external data. The class table is so stored once,
// and no graph comes near protobuf's 2 GB limit however many classes there
// are. Errors wrap ErrState or ErrONNX.
func ClassifierFiles(t gauss.ClassifierTables, backbone []byte) (map[string][]byte, error) {
	if err := validateTables(t); err != nil {
		return nil, err
	}
	sc := newScoring(t)
	files := map[string][]byte{bundle.ClassifierDataFile: float32Bytes(sc.table())}
	var err error
	if files[bundle.ClassifierFile], err = classifierGraph(sc, bundle.ClassifierDataFile); err != nil {
		return nil, err
	}
	if files[bundle.ModelFile], err = fuseClassifier(backbone, sc, bundle.ClassifierDataFile); err != nil {
		return nil, err
	}
	return files, nil
}

// add appends the scoring graph to g, reading features z [N,S] and
// writing bundle.TensorScores. With location set, the form's table is
// external data in that file.
func (sc scoring) add(g *graph, z, location string) {
	s := sc.t.S
	if sc.t.Normalize {
		norm := g.op("ReduceL2", "classifier.norm", []string{z}, attrInts("axes", 1), attrInt("keepdims", 1))
		eps := g.floats("classifier.norm_eps", nil, []float32{gauss.NormEpsilon})
		norm = g.op("Max", "classifier.norm_clamped", []string{norm, eps})
		z = g.op("Div", "classifier.features_normalized", []string{z, norm})
	}
	table := func(name string, shape []int) string {
		if location == "" {
			return g.floats(name, shape, sc.table())
		}
		return g.external(name, shape, location, int64(4*len(sc.table())))
	}
	if sc.q == nil {
		sc.addFactored(g, z, table("classifier.whiten", []int{sc.t.K * s, s}))
		return
	}
	q := sc.q
	u := g.op("Sub", "classifier.centered", []string{z, g.floats("classifier.center", []int{s}, q.Center)})
	col := g.op("Unsqueeze", "classifier.centered_column", []string{u, g.ints("classifier.axis_2", []int{1}, 2)})
	row := g.op("Unsqueeze", "classifier.centered_row", []string{u, g.ints("classifier.axis_1", []int{1}, 1)})
	outer := g.op("Mul", "classifier.outer", []string{col, row})
	outer = g.op("Reshape", "classifier.outer_flat", []string{outer, g.ints("classifier.outer_shape", []int{2}, -1, int64(s*s))})
	pairs := gauss.UpperPairs(s)
	upper := g.op("Gather", "classifier.outer_upper", []string{outer, g.ints("classifier.upper_pairs", []int{len(pairs)}, pairs...)}, attrInt("axis", 1))
	phi := g.op("Concat", "classifier.quadratic_features", []string{upper, u}, attrInt("axis", 1))
	coef := table("classifier.coef", []int{q.K, gauss.QuadraticDim(s)})
	g.op("Gemm", bundle.TensorScores, []string{phi, coef, g.floats("classifier.const", []int{q.K}, q.Const)}, attrInt("transB", 1))
}

// addFactored appends the factored form reading the normalised features
// zh and the stacked whitening matrices w [K*S, S].
func (sc scoring) addFactored(g *graph, zh, w string) {
	t := sc.t
	// offset[c,i] = sum_j W_c[i,j] m_c[j], in float64 so the subtraction in
	// the graph is the only float32 rounding of the mean term.
	offset := make([]float32, t.K*t.S)
	for c := range t.K {
		for i := range t.S {
			row := t.Whiten[(c*t.S+i)*t.S : (c*t.S+i+1)*t.S]
			var sum float64
			for j, v := range row {
				sum += float64(v) * float64(t.Means[c*t.S+j])
			}
			offset[c*t.S+i] = float32(-sum)
		}
	}
	off := g.floats("classifier.neg_whitened_means", []int{t.K * t.S}, offset)
	y := g.op("Gemm", "classifier.whitened", []string{zh, w, off}, attrInt("transB", 1))
	y = g.op("Reshape", "classifier.whitened_per_class", []string{y, g.ints("classifier.per_class_shape", []int{3}, -1, int64(t.K), int64(t.S))})
	sq := g.op("Mul", "classifier.squared", []string{y, y})
	sum := g.op("ReduceSum", "classifier.distance", []string{sq, g.ints("classifier.sum_axes", []int{1}, 2)}, attrInt("keepdims", 0))
	g.op("Add", bundle.TensorScores, []string{sum, g.floats("classifier.bias", []int{t.K}, t.Bias)})
}
