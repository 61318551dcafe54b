package gauss

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// QuadraticTables are the classifier's scores written as one linear map of
// quadratic features, the form classifier.onnx and Classifier.Scores
// evaluate: every class's quadratic form becomes one column of one matrix
// product, so scoring a batch of N features against K classes is a single
// [N, D] x [D, K] GEMM with D = S(S+1)/2 + S, and nothing of size N*K*S is
// ever formed. With P_c = W_c^T W_c (the shrunk precision Sigma'_c^-1),
// m'_c = m_c - center and u = zh - center,
//
//	score_c = (u - m'_c)^T P_c (u - m'_c) + b_c
//	        = phi(u) . Coef_c + Const_c
//	phi(u)  = [ u_i u_j for i <= j (row-major upper triangle) ; u_1 .. u_S ]
//	Coef_c  = [ P_c[i][j] * (1 if i = j else 2) for i <= j ; -2 P_c m'_c ]
//	Const_c = m'_c^T P_c m'_c + b_c
//
// which is ||W_c (zh - m_c)||^2 + b_c of ClassifierTables exactly in real
// arithmetic. Center, the mean of the class means, keeps u and m'_c near
// the origin so the expanded terms cancel little in float32 (docs/classes.md
// measures the agreement with the factored form).
//
//	Center [S]     rounded to float32 before the expansion uses it
//	Coef   [K, D]  row-major, one row per class
//	Const  [K]
type QuadraticTables struct {
	K, S      int
	Center    []float32
	Coef      []float32
	Const     []float32
	Normalize bool
}

// QuadraticDim returns D = S(S+1)/2 + S, the length of phi(u) and of one
// row of QuadraticTables.Coef.
func QuadraticDim(s int) int { return s*(s+1)/2 + s }

// UpperPairs returns, for i <= j in row-major order, the index i*S + j into
// a row-major S x S matrix: the entries of the outer product u u^T that
// phi(u) keeps (QuadraticTables).
func UpperPairs(s int) []int64 {
	out := make([]int64, 0, s*(s+1)/2)
	for i := range s {
		for j := i; j < s; j++ {
			out = append(out, int64(i*s+j))
		}
	}
	return out
}

// Quadratic expands the factored tables into QuadraticTables, in float64
// arithmetic from the float32 values of t, rounding only the results. It
// panics if the slices do not have the lengths K and S give.
func (t ClassifierTables) Quadratic() QuadraticTables {
	k, s := t.K, t.S
	if len(t.Means) != k*s || len(t.Whiten) != k*s*s || len(t.Bias) != k {
		panic(fmt.Sprintf("gauss: quadratic: tables of K=%d, S=%d have %d means, %d whiten, %d bias values",
			k, s, len(t.Means), len(t.Whiten), len(t.Bias)))
	}
	e := newExpansion(k, s, t.Means)
	q := QuadraticTables{K: k, S: s, Center: toFloat32(e.center), Coef: make([]float32, k*e.d),
		Const: make([]float32, k), Normalize: t.Normalize}
	w := make([]float64, s*s)
	mean := make([]float64, s)
	coef := make([]float64, e.d)
	for c := range k {
		for i, v := range t.Whiten[c*s*s : (c+1)*s*s] {
			w[i] = float64(v)
		}
		for i, v := range t.Means[c*s : (c+1)*s] {
			mean[i] = float64(v)
		}
		q.Const[c] = float32(e.class(w, mean, float64(t.Bias[c]), coef))
		for i, v := range coef {
			q.Coef[c*e.d+i] = float32(v)
		}
	}
	return q
}

// expansion computes QuadraticTables rows class by class, with scratch
// space for one class.
type expansion struct {
	s, d   int
	center []float64 // float32-representable
	p      []float64 // [S, S] scratch: P_c, upper triangle
	shift  []float64 // [S] scratch: m'_c
	pm     []float64 // [S] scratch: P_c m'_c
}

// newExpansion sets the center to the mean of the K class means ([K, S]
// row-major), rounded to float32 so that a float32 graph subtracts the
// same center.
func newExpansion[T float32 | float64](k, s int, means []T) *expansion {
	e := &expansion{s: s, d: QuadraticDim(s), center: make([]float64, s),
		p: make([]float64, s*s), shift: make([]float64, s), pm: make([]float64, s)}
	for c := range k {
		for i, v := range means[c*s : (c+1)*s] {
			e.center[i] += float64(v)
		}
	}
	for i := range e.center {
		e.center[i] = float64(float32(e.center[i] / float64(k)))
	}
	return e
}

// class writes Coef_c of the class with whitening matrix w ([S, S]
// row-major), mean m and bias b into coef ([D]) and returns Const_c.
func (e *expansion) class(w, m []float64, b float64, coef []float64) float64 {
	s := e.s
	// P = W^T W, upper triangle.
	blas64.Syrk(blas.Trans, 1, blas64.General{Rows: s, Cols: s, Stride: s, Data: w},
		0, blas64.Symmetric{N: s, Stride: s, Uplo: blas.Upper, Data: e.p})
	for i := range s {
		e.shift[i] = m[i] - e.center[i]
	}
	blas64.Symv(1, blas64.Symmetric{N: s, Stride: s, Uplo: blas.Upper, Data: e.p},
		blas64.Vector{N: s, Inc: 1, Data: e.shift}, 0, blas64.Vector{N: s, Inc: 1, Data: e.pm})
	n := 0
	for i := range s {
		coef[n] = e.p[i*s+i]
		n++
		for j := i + 1; j < s; j++ {
			coef[n] = 2 * e.p[i*s+j]
			n++
		}
	}
	constant := b
	for i := range s {
		coef[n+i] = -2 * e.pm[i]
		constant += e.shift[i] * e.pm[i]
	}
	return constant
}

// features writes phi(zh - center) of one feature row zh into out ([D]).
func (e *expansion) features(zh, out []float64) { QuadraticFeatures(zh, e.center, out) }

// QuadraticFeatures writes phi(zh - center) of QuadraticTables for one
// (normalised) feature zh into out: the products u_i u_j for i <= j in
// row-major order (UpperPairs), then u = zh - center, D values in all
// (QuadraticDim). In float32 it is the arithmetic of the exported graph.
func QuadraticFeatures[T float32 | float64](zh, center, out []T) {
	s := len(zh)
	u := out[len(out)-s:]
	for i := range s {
		u[i] = zh[i] - center[i]
	}
	n := 0
	for i := range s {
		for j := i; j < s; j++ {
			out[n] = u[i] * u[j]
			n++
		}
	}
}
