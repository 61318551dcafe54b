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
	outputs(g, q.K)
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

// outputs declares the scores outputs addClassifier wrote for k classes.
func outputs(g *graph, k int) {
	g.output(bundle.TensorScores, elemFloat, batchDim, k)
	if k > bundle.ShortlistSize {
		g.output(bundle.TensorScoresShortlist, elemFloat, batchDim, k)
	}
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
	constant := g.floats("classifier.const", []int{q.K}, q.Const)
	g.op("Gemm", bundle.TensorScores, []string{phi, coef, constant}, attrInt("transB", 1))
	if q.K > bundle.ShortlistSize {
		addShortlist(g, u, phi, coef, constant, q)
	}
}

// addShortlist appends bundle.TensorScoresShortlist: a cheaper score, the
// classes' linear terms and the diagonal of their quadratic forms,
//
//	cheap_c = sum_i P_c[i][i] u_i^2 - 2 u . P_c m'_c + Const_c
//
// one [N, 2S] x [2S, K] Gemm, picks the bundle.ShortlistSize classes of
// smallest cheap score (TopK); only their rows of Coef are read (Gather)
// and scored exactly (batched MatMul), and the other classes get
// max(cheap_c, the largest exact score of the row), ScatterElements
// putting the exact scores in their columns. At batch 1 this reads about
// (2S + ShortlistSize*D/K) floats per class instead of D.
func addShortlist(g *graph, u, phi, coef, constant string, q gauss.QuadraticTables) {
	s, d := q.S, gauss.QuadraticDim(q.S)
	cheap := make([]float32, 0, q.K*2*s)
	for c := range q.K {
		row := q.Coef[c*d : (c+1)*d]
		n := 0
		for i := range s {
			cheap = append(cheap, row[n])
			n += s - i
		}
		cheap = append(cheap, row[d-s:]...)
	}
	sq := g.op("Mul", "shortlist.squared", []string{u, u})
	lin := g.op("Concat", "shortlist.features", []string{sq, u}, attrInt("axis", 1))
	cheapScores := g.op("Gemm", "shortlist.cheap_scores", []string{lin, g.floats("shortlist.coef", []int{q.K, 2 * s}, cheap), constant}, attrInt("transB", 1))
	top := g.node("TopK", []string{cheapScores, g.ints("shortlist.size", []int{1}, bundle.ShortlistSize)},
		[]string{"shortlist.cheap_best", "shortlist.classes"}, attrInt("axis", 1), attrInt("largest", 0), attrInt("sorted", 1))
	classes := top[1]
	rows := g.op("Gather", "shortlist.coef_rows", []string{coef, classes}, attrInt("axis", 0))
	col := g.op("Unsqueeze", "shortlist.features_column", []string{phi, g.ints("shortlist.axis_2", []int{1}, 2)})
	exact := g.op("MatMul", "shortlist.quadratic", []string{rows, col})
	exact = g.op("Squeeze", "shortlist.quadratic_flat", []string{exact, g.ints("shortlist.squeeze_axis", []int{1}, 2)})
	exact = g.op("Add", "shortlist.exact_scores", []string{exact, g.op("Gather", "shortlist.const", []string{constant, classes}, attrInt("axis", 0))})
	worst := g.op("ReduceMax", "shortlist.worst_exact", []string{exact}, attrInts("axes", 1), attrInt("keepdims", 1))
	floor := g.op("Max", "shortlist.others", []string{cheapScores, worst})
	g.op("ScatterElements", bundle.TensorScoresShortlist, []string{floor, classes, exact}, attrInt("axis", 1))
}
