package classgraph

import (
	"fmt"
	"math"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/export/onnxgraph"
	"github.com/bicyc/bicyc/export/onnxpb"
	"github.com/bicyc/bicyc/gauss"
)

// shortlistTable is the int8 table of the shortlist's approximate score:
// each class's row of gauss.QuadraticTables.Coef less the mean row over
// all classes, quantised symmetrically per class.
type shortlistTable struct {
	mean  []float32 // [D], the mean row
	resid []byte    // [D, K] int8, column c = round((Coef_c - mean) / scale_c)
	scale []float32 // [K]
}

// newShortlistTable quantises q.Coef. Subtracting the mean row first
// matters: the rows share most of their size (every class's quadratic form
// is near the identity after normalisation), and quantising whole rows
// left the exact top-1 class out of the 128 best approximate scores on
// 2 % of the test images at 5000 classes, against none with the residual
// (docs/classes.md).
func newShortlistTable(q *gauss.QuadraticTables) shortlistTable {
	k, d := q.K, gauss.QuadraticDim(q.S)
	mean := make([]float64, d)
	for c := range k {
		for j, v := range q.Coef[c*d : (c+1)*d] {
			mean[j] += float64(v)
		}
	}
	t := shortlistTable{mean: make([]float32, d), resid: make([]byte, d*k), scale: make([]float32, k)}
	for j := range mean {
		t.mean[j] = float32(mean[j] / float64(k))
	}
	for c := range k {
		row := q.Coef[c*d : (c+1)*d]
		var peak float64
		for j, v := range row {
			peak = math.Max(peak, math.Abs(float64(v)-float64(t.mean[j])))
		}
		scale := peak / 127
		if scale == 0 {
			scale = 1
		}
		t.scale[c] = float32(scale)
		for j, v := range row {
			r := math.Round((float64(v) - float64(t.mean[j])) / scale)
			t.resid[j*k+c] = byte(int8(math.Max(-127, math.Min(127, r))))
		}
	}
	return t
}

// Shortlist returns an approximate classifier graph for the tables t
// (ExpandedMinClasses classes or more), self-contained: it maps
// bundle.TensorFeatures [N,S] to the n classes most likely to score best,
// bundle.TensorShortlistClasses [N,n], their exact scores,
// bundle.TensorShortlistScores [N,n], and every class's approximate score,
// bundle.TensorApproximateScores [N,K]. Files writes the same graph as a
// model directory's bundle.ShortlistFile, reading the exact rows from the
// class table's file.
//
// At batch 1 the exact classifier reads its whole float32 table per image
// (43 MB at 5000 classes, S = 64), so its cost is memory bandwidth. The
// shortlist reads an int8 table a quarter that size: with phi the
// quadratic features of gauss.QuadraticTables, Coef_c = mean + scale_c *
// R_c (R_c int8),
//
//	approx_c = phi . mean + scale_c * phi_q . R_c + Const_c
//	phi_q    = DynamicQuantizeLinear(phi)          (uint8, per tensor)
//
// in one MatMulInteger, whose int8 kernels run at several times the speed
// of the float32 Gemm on x86 CPUs, while ONNX Runtime's float16 MatMul ran
// six times slower than float32 (BenchmarkTablePrecision). The n best
// approximate classes (TopK) are then scored exactly from their rows of
// Coef (Gather, MatMul). The top-1 class and the top-k list equal the
// exact ones whenever the exact best k are among the n: docs/classes.md
// gives the measured rate. Errors wrap ErrTables.
func Shortlist(t gauss.ClassifierTables, n int) ([]byte, error) {
	if err := validateTables(t); err != nil {
		return nil, err
	}
	q, err := newScoring(t).expanded()
	if err != nil {
		return nil, err
	}
	return shortlistGraph(q, n, "")
}

// shortlistGraph builds the Shortlist graph of the expanded tables q, its
// exact table as external data in location when location is not empty.
func shortlistGraph(q *gauss.QuadraticTables, n int, location string) ([]byte, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: shortlist of %d classes, want >= 1", ErrTables, n)
	}
	n = min(n, q.K)
	st := newShortlistTable(q)
	k, s, d := q.K, q.S, gauss.QuadraticDim(q.S)
	g := onnxgraph.New("bicyc_shortlist")
	z := g.Input(bundle.TensorFeatures, onnxgraph.Float, onnxgraph.BatchDim, s)
	if q.Normalize {
		z = normalized(g, z)
	}
	phi := quadraticFeatures(g, z, q)
	base := g.Op("MatMul", "shortlist.mean_term", []string{phi, g.Floats("shortlist.mean_row", []int{d, 1}, st.mean)})
	// phi's quadratic block (u_i u_j) and linear block (u) differ in size
	// by about |u|, so each is quantised with its own scale: one scale for
	// both rounded the quadratic block to a few levels.
	quadDim := d - s
	blocks := []struct {
		name       string
		start, end int
	}{{"quadratic", 0, quadDim}, {"linear", quadDim, d}}
	var approx string
	for _, b := range blocks {
		part := g.Op("Slice", "shortlist."+b.name, []string{phi, g.Ints("shortlist."+b.name+"_start", []int{1}, int64(b.start)),
			g.Ints("shortlist."+b.name+"_end", []int{1}, int64(b.end)), g.Ints("shortlist."+b.name+"_axis", []int{1}, 1)})
		quant := g.Node("DynamicQuantizeLinear", []string{part}, []string{"shortlist." + b.name + "_q", "shortlist." + b.name + "_scale", "shortlist." + b.name + "_zero"})
		table := g.Raw("shortlist."+b.name+"_residual", onnxpb.TensorProto_INT8, []int{b.end - b.start, k}, st.resid[b.start*k:b.end*k])
		acc := g.Op("MatMulInteger", "shortlist."+b.name+"_int", []string{quant[0], table, quant[2]})
		accf := g.Op("Cast", "shortlist."+b.name+"_float", []string{acc}, onnxgraph.AttrInt("to", int64(onnxgraph.Float)))
		term := g.Op("Mul", "shortlist."+b.name+"_term", []string{accf, quant[1]})
		if approx == "" {
			approx = term
		} else {
			approx = g.Op("Add", "shortlist.residual_sum", []string{approx, term})
		}
	}
	approx = g.Op("Mul", "shortlist.residual_term", []string{approx, g.Floats("shortlist.class_scale", []int{k}, st.scale)})
	approx = g.Op("Add", "shortlist.approx_partial", []string{approx, base})
	constant := g.Floats("classifier.const", []int{k}, q.Const)
	approx = g.Op("Add", bundle.TensorApproximateScores, []string{approx, constant})
	top := g.Node("TopK", []string{approx, g.Ints("shortlist.n", []int{1}, int64(n))}, []string{"shortlist.approx_best", bundle.TensorShortlistClasses},
		onnxgraph.AttrInt("axis", 1), onnxgraph.AttrInt("largest", 0), onnxgraph.AttrInt("sorted", 1))
	var coef string
	if location == "" {
		coef = g.Floats("classifier.coef", []int{k, d}, q.Coef)
	} else {
		coef = g.External("classifier.coef", []int{k, d}, location, int64(4*len(q.Coef)))
	}
	rows := g.Op("Gather", "shortlist.rows", []string{coef, top[1]}, onnxgraph.AttrInt("axis", 0))
	col := g.Op("Unsqueeze", "shortlist.phi_column", []string{phi, g.Ints("shortlist.axis_2", []int{1}, 2)})
	exact := g.Op("MatMul", "shortlist.exact_quadratic", []string{rows, col})
	exact = g.Op("Squeeze", "shortlist.exact_flat", []string{exact, g.Ints("shortlist.squeeze_axes", []int{1}, 2)})
	consts := g.Op("Gather", "shortlist.consts", []string{constant, top[1]}, onnxgraph.AttrInt("axis", 0))
	g.Op("Add", bundle.TensorShortlistScores, []string{exact, consts})
	g.Output(bundle.TensorShortlistClasses, onnxgraph.Int64, onnxgraph.BatchDim, n)
	g.Output(bundle.TensorShortlistScores, onnxgraph.Float, onnxgraph.BatchDim, n)
	g.Output(bundle.TensorApproximateScores, onnxgraph.Float, onnxgraph.BatchDim, k)
	return onnxgraph.Marshal(g.Model(fmt.Sprintf("bicyc shortlist classifier: features [N,%d] -> the %d best of %d classes, int8 approximation then exact scores", s, n, k)))
}
