package classgraph

import (
	"errors"
	"fmt"
	"math"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/export/onnxgraph"
	"github.com/bicyc/bicyc/gauss"
)

// ErrTables is wrapped by every error about classifier tables: sizes that
// disagree, a NaN or infinite value, a dim other than the backbone's.
var ErrTables = errors.New("invalid classifier tables")

// validateTables checks the table sizes against K and S and that every
// value is finite.
func validateTables(t gauss.ClassifierTables) error {
	if t.K < 1 || t.S < 1 {
		return fmt.Errorf("%w: classifier tables have K=%d classes and S=%d dims, want both >= 1", ErrTables, t.K, t.S)
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
// Files writes the same graph with its table (Coef or Wall) in a
// file of its own. Errors wrap ErrTables.
func Classifier(t gauss.ClassifierTables) ([]byte, error) {
	return ClassifierForm(t, FormAuto)
}

// Form is the form a classifier graph evaluates the scores in (see
// Classifier).
type Form int

const (
	// FormAuto is the expanded form from ExpandedMinClasses classes on,
	// the factored one below: what Classifier, Files and Append write.
	FormAuto Form = iota
	// FormFactored is || W_c (zh - m_c) ||^2 + b_c, class by class.
	FormFactored
	// FormExpanded is gauss.QuadraticTables' one Gemm over quadratic
	// features.
	FormExpanded
)

// ClassifierForm is Classifier in the given form, for comparing the two
// (their scores agree to float32 rounding; their speed does not).
func ClassifierForm(t gauss.ClassifierTables, form Form) ([]byte, error) {
	if err := validateTables(t); err != nil {
		return nil, err
	}
	sc := newScoring(t)
	switch form {
	case FormFactored:
		sc.q = nil
	case FormExpanded:
		q := t.Quadratic()
		sc.q = &q
	}
	return classifierGraph(sc, "")
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

// expanded returns the expanded tables a shortlist scores from, or an
// error wrapping ErrTables when the classes are too few for the expanded
// form (ExpandedMinClasses).
func (sc scoring) expanded() (*gauss.QuadraticTables, error) {
	if sc.q == nil {
		return nil, fmt.Errorf("%w: a shortlist needs at least %d classes, the tables have %d", ErrTables, ExpandedMinClasses, sc.t.K)
	}
	return sc.q, nil
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
	g := onnxgraph.New("bicyc_classifier")
	z := g.Input(bundle.TensorFeatures, onnxgraph.Float, onnxgraph.BatchDim, sc.t.S)
	sc.add(g, z, location)
	g.Output(bundle.TensorScores, onnxgraph.Float, onnxgraph.BatchDim, sc.t.K)
	return onnxgraph.Marshal(g.Model(fmt.Sprintf("bicyc Gaussian classifier: features [N,%d] -> scores [N,%d], smaller is closer", sc.t.S, sc.t.K)))
}

// Files returns the classifier's files of a model directory for
// tables t and the directory's backbone.onnx: classifier.onnx
// (bundle.ClassifierFile, as Classifier), model.onnx (bundle.ModelFile,
// backbone and classifier fused as ModelFromBackbone, scores and features
// out: bundle.Manifest.ModelFeatures) and
// bundle.ClassifierDataFile, the graphs' table (the [K, D] Coef matrix of
// gauss.QuadraticTables, or the [K*S, S] stacked W_c below
// ExpandedMinClasses classes) as raw little-endian float32, which the
// graphs read as ONNX external data; with shortlist > 0 (the manifest's
// bundle.Manifest.ShortlistSize) also bundle.ShortlistFile, the Shortlist
// graph of that many classes, whose exact rows come from the same file.
// The class table is so stored once, and no graph comes near protobuf's
// 2 GB limit however many classes there are (the shortlist's own int8
// table, 2.1 KB per class at S = 64, would reach it near a million
// classes). Errors wrap ErrTables or ErrONNX.
func Files(t gauss.ClassifierTables, backbone []byte, shortlist int) (map[string][]byte, error) {
	if err := validateTables(t); err != nil {
		return nil, err
	}
	return newScoring(t).files(backbone, shortlist)
}

// files is Files of the valid tables of sc.
func (sc scoring) files(backbone []byte, shortlist int) (map[string][]byte, error) {
	files := map[string][]byte{bundle.ClassifierDataFile: onnxgraph.Float32Bytes(sc.table())}
	var err error
	if files[bundle.ClassifierFile], err = classifierGraph(sc, bundle.ClassifierDataFile); err != nil {
		return nil, err
	}
	if files[bundle.ModelFile], err = fuseClassifier(backbone, sc, bundle.ClassifierDataFile); err != nil {
		return nil, err
	}
	if shortlist > 0 {
		q, err := sc.expanded()
		if err != nil {
			return nil, err
		}
		if files[bundle.ShortlistFile], err = shortlistGraph(q, shortlist, bundle.ClassifierDataFile); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// ModelFiles is Files for a model directory whose classifier options ask
// for a shortlist of n classes (gauss.ClassifierOptions.ShortlistSize; 0:
// none): the shortlist PlanShortlist chooses from the classes' Gaussians
// protos, for the manifest (nil when n is 0), and Files with its size.
// Errors wrap ErrTables or ErrONNX.
func ModelFiles(t gauss.ClassifierTables, protos []gauss.Gaussian, backbone []byte, n int) (*bundle.Shortlist, map[string][]byte, error) {
	if err := validateTables(t); err != nil {
		return nil, nil, err
	}
	sc := newScoring(t)
	var plan *bundle.Shortlist
	size := 0
	if n > 0 {
		q, err := sc.expanded()
		if err != nil {
			return nil, nil, err
		}
		if plan, err = planShortlist(q, protos, n); err != nil {
			return nil, nil, err
		}
		size = plan.Size
	}
	files, err := sc.files(backbone, size)
	return plan, files, err
}

// add appends the scoring graph to g, reading features z [N,S] and
// writing bundle.TensorScores. With location set, the form's table is
// external data in that file.
func (sc scoring) add(g *onnxgraph.Graph, z, location string) {
	s := sc.t.S
	if sc.t.Normalize {
		z = normalized(g, z)
	}
	table := func(name string, shape []int) string {
		if location == "" {
			return g.Floats(name, shape, sc.table())
		}
		return g.External(name, shape, location, int64(4*len(sc.table())))
	}
	if sc.q == nil {
		sc.addFactored(g, z, table("classifier.whiten", []int{sc.t.K * s, s}))
		return
	}
	q := sc.q
	phi := quadraticFeatures(g, z, q)
	coef := table("classifier.coef", []int{q.K, gauss.QuadraticDim(s)})
	g.Op("Gemm", bundle.TensorScores, []string{phi, coef, g.Floats("classifier.const", []int{q.K}, q.Const)}, onnxgraph.AttrInt("transB", 1))
}

// normalized appends z / max(||z||_2, gauss.NormEpsilon), row by row.
func normalized(g *onnxgraph.Graph, z string) string {
	norm := g.Op("ReduceL2", "classifier.norm", []string{z}, onnxgraph.AttrInts("axes", 1), onnxgraph.AttrInt("keepdims", 1))
	eps := g.Floats("classifier.norm_eps", nil, []float32{gauss.NormEpsilon})
	norm = g.Op("Max", "classifier.norm_clamped", []string{norm, eps})
	return g.Op("Div", "classifier.features_normalized", []string{z, norm})
}

// quadraticFeatures appends phi(zh - center) of gauss.QuadraticTables for
// the (normalised) features zh [N,S] and returns it, [N,D].
func quadraticFeatures(g *onnxgraph.Graph, zh string, q *gauss.QuadraticTables) string {
	s := q.S
	u := g.Op("Sub", "classifier.centered", []string{zh, g.Floats("classifier.center", []int{s}, q.Center)})
	col := g.Op("Unsqueeze", "classifier.centered_column", []string{u, g.Ints("classifier.axis_2", []int{1}, 2)})
	row := g.Op("Unsqueeze", "classifier.centered_row", []string{u, g.Ints("classifier.axis_1", []int{1}, 1)})
	outer := g.Op("Mul", "classifier.outer", []string{col, row})
	outer = g.Op("Reshape", "classifier.outer_flat", []string{outer, g.Ints("classifier.outer_shape", []int{2}, -1, int64(s*s))})
	pairs := gauss.UpperPairs(s)
	upper := g.Op("Gather", "classifier.outer_upper", []string{outer, g.Ints("classifier.upper_pairs", []int{len(pairs)}, pairs...)}, onnxgraph.AttrInt("axis", 1))
	return g.Op("Concat", "classifier.quadratic_features", []string{upper, u}, onnxgraph.AttrInt("axis", 1))
}

// addFactored appends the factored form reading the normalised features
// zh and the stacked whitening matrices w [K*S, S].
func (sc scoring) addFactored(g *onnxgraph.Graph, zh, w string) {
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
	off := g.Floats("classifier.neg_whitened_means", []int{t.K * t.S}, offset)
	y := g.Op("Gemm", "classifier.whitened", []string{zh, w, off}, onnxgraph.AttrInt("transB", 1))
	y = g.Op("Reshape", "classifier.whitened_per_class", []string{y, g.Ints("classifier.per_class_shape", []int{3}, -1, int64(t.K), int64(t.S))})
	sq := g.Op("Mul", "classifier.squared", []string{y, y})
	sum := g.Op("ReduceSum", "classifier.distance", []string{sq, g.Ints("classifier.sum_axes", []int{1}, 2)}, onnxgraph.AttrInt("keepdims", 0))
	g.Op("Add", bundle.TensorScores, []string{sum, g.Floats("classifier.bias", []int{t.K}, t.Bias)})
}

// Append adds the classifier of tables t after the value features ([N,S])
// of g, ending in the graph output bundle.TensorScores [N,K], its table
// inline: how a graph holding the backbone too (export.Model) scores.
// Errors wrap ErrTables.
func Append(g *onnxgraph.Graph, features string, t gauss.ClassifierTables) error {
	if err := validateTables(t); err != nil {
		return err
	}
	newScoring(t).add(g, features, "")
	g.Output(bundle.TensorScores, onnxgraph.Float, onnxgraph.BatchDim, t.K)
	return nil
}

// checkValues reports a length other than n or a NaN or infinite value,
// naming what (the table) and the first bad index.
func checkValues(what string, data []float32, n int) error {
	if len(data) != n {
		return fmt.Errorf("%w: %s has %d values, want %d", ErrTables, what, len(data), n)
	}
	for i, v := range data {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("%w: %s has non-finite value %v at index %d", ErrTables, what, v, i)
		}
	}
	return nil
}
