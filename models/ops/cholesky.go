package ops

import (
	"errors"
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ErrNotPositiveDefinite is returned (wrapped) when a matrix that must be symmetric positive definite is not,
// and no allowed repair makes it so.
var ErrNotPositiveDefinite = errors.New("matrix is not positive definite")

// ErrNonFinite is returned (wrapped) when an input holds NaN or an infinity, which no factorisation can repair.
// During training it usually means the learning rate is too high.
//
// A G.TapeMachine wraps the errors of ops in a type that has an Err() method but no Unwrap, so errors.Is does not
// see these sentinels through RunAll's error directly: take errors.As(err, &e) with e of type
// interface{ Err() error }, then errors.Is(e.Err(), ErrNonFinite).
var ErrNonFinite = errors.New("non-finite value")

// Cholesky returns the lower-triangular Cholesky factor L of the symmetric positive definite matrix a:
//
//	sym(a) = L L^T,   sym(a) = (a + a^T) / 2
//
// a is [n,n], float32 or float64 (computed in float64 with gonum); L has the same shape and dtype, with zeros above
// the diagonal. Running the graph fails with an error wrapping ErrNotPositiveDefinite when sym(a) is not
// numerically positive definite; use RobustCholesky outside graphs to repair such matrices.
//
// The gradient is the symmetric Cholesky backward of Murray (2016), "Differentiation of the Cholesky
// decomposition", arXiv:1602.07527, eq. 10, as PyTorch uses it:
//
//	abar = sym( L^-T Phi(L^T tril(Lbar)) L^-1 ),   Phi(X) = tril(X) with its diagonal halved
func Cholesky(a *G.Node) (*G.Node, error) {
	if err := requireFloatNode("cholesky", a); err != nil {
		return nil, err
	}
	if s := a.Shape(); s.Dims() != 2 || s[0] != s[1] || s[0] < 1 {
		return nil, fmt.Errorf("cholesky: input %q has shape %v, want a square [n,n] matrix: %w", a.Name(), s, ErrShape)
	}
	return G.ApplyOp(choleskyOp{}, a)
}

// choleskyOp factors sym(a) = L L^T.
type choleskyOp struct{}

func (choleskyOp) Arity() int { return 1 }

func (choleskyOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	m := G.TensorType{Dims: 2, Of: a}
	return hm.NewFnType(m, m)
}

func (choleskyOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return inferredShape("cholesky", in[0])
}

func (choleskyOp) Do(in ...G.Value) (G.Value, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("cholesky: got %d inputs, want 1", len(in))
	}
	a, err := floatDenseValue("cholesky", in[0])
	if err != nil {
		return nil, err
	}
	sym, err := symmetricPart("cholesky", a)
	if err != nil {
		return nil, err
	}
	var chol mat.Cholesky
	if !chol.Factorize(sym) {
		return nil, fmt.Errorf("cholesky: %d x %d input: %w", sym.SymmetricDim(), sym.SymmetricDim(), ErrNotPositiveDefinite)
	}
	var l mat.TriDense
	chol.LTo(&l)
	return denseFromMatrix(&l, a.Dtype()), nil
}

func (choleskyOp) ReturnsPtr() bool      { return false }
func (choleskyOp) CallsExtern() bool     { return false }
func (choleskyOp) OverwritesInput() int  { return -1 }
func (choleskyOp) WriteHash(h hash.Hash) { fmt.Fprint(h, "bicyc.Cholesky") }
func (op choleskyOp) Hashcode() uint32   { return hashByText(op) }
func (choleskyOp) String() string        { return "Cholesky" }

// DiffWRT reports that the factor is differentiable with respect to the matrix.
func (choleskyOp) DiffWRT(inputs int) []bool { return []bool{true} }

// SymDiff returns abar from the factor (the op's own output) and its gradient.
func (choleskyOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != 1 {
		return nil, fmt.Errorf("cholesky: differentiating %d inputs, want 1", len(inputs))
	}
	abar, err := G.ApplyOp(choleskyDiffOp{}, output, grad)
	if err != nil {
		return nil, fmt.Errorf("cholesky: building gradient: %w", err)
	}
	return G.Nodes{abar}, nil
}

// choleskyDiffOp maps (L, Lbar) to abar.
type choleskyDiffOp struct{}

func (choleskyDiffOp) Arity() int { return 2 }

func (choleskyDiffOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	m := G.TensorType{Dims: 2, Of: a}
	return hm.NewFnType(m, m, m)
}

func (choleskyDiffOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return inferredShape("cholesky gradient", in[0])
}

func (choleskyDiffOp) Do(in ...G.Value) (G.Value, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("cholesky gradient: got %d inputs, want 2", len(in))
	}
	lt, err := floatDenseValue("cholesky gradient", in[0])
	if err != nil {
		return nil, err
	}
	lbart, err := floatDenseValue("cholesky gradient", in[1])
	if err != nil {
		return nil, err
	}
	if !lt.Shape().Eq(lbart.Shape()) {
		return nil, fmt.Errorf("cholesky gradient: factor %v and gradient %v differ in shape: %w", lt.Shape(), lbart.Shape(), ErrShape)
	}
	n := lt.Shape()[0]
	l := mat.NewTriDense(n, mat.Lower, nil)
	l.Copy(denseToMatrix(lt))
	abar := choleskyBackward(l, denseToMatrix(lbart))
	return denseFromMatrix(abar, lt.Dtype()), nil
}

func (choleskyDiffOp) ReturnsPtr() bool      { return false }
func (choleskyDiffOp) CallsExtern() bool     { return false }
func (choleskyDiffOp) OverwritesInput() int  { return -1 }
func (choleskyDiffOp) WriteHash(h hash.Hash) { fmt.Fprint(h, "bicyc.CholeskyDiff") }
func (op choleskyDiffOp) Hashcode() uint32   { return hashByText(op) }
func (choleskyDiffOp) String() string        { return "CholeskyDiff" }

// choleskyBackward returns the symmetric gradient of a scalar loss with respect to a, given the lower factor l of
// a and the loss's gradient lbar with respect to l (only its lower triangle is read). Murray (2016), eq. 10:
//
//	P = Phi(L^T tril(Lbar));   abar = sym(L^-T P L^-1)
func choleskyBackward(l *mat.TriDense, lbar mat.Matrix) *mat.SymDense {
	n, _ := l.Dims()
	lowerBar := mat.NewTriDense(n, mat.Lower, nil)
	lowerBar.Copy(lbar)
	var p mat.Dense
	p.Mul(l.T(), lowerBar)
	for i := range n {
		p.Set(i, i, 0.5*p.At(i, i))
		for j := i + 1; j < n; j++ {
			p.Set(i, j, 0)
		}
	}
	// Two triangular solves instead of an explicit inverse: X = L^-T P, then X = X L^-1.
	lt := l.RawTriangular()
	pm := p.RawMatrix()
	blas64.Trsm(blas.Left, blas.Trans, 1, lt, pm)
	blas64.Trsm(blas.Right, blas.NoTrans, 1, lt, pm)
	abar := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			abar.SetSym(i, j, 0.5*(p.At(i, j)+p.At(j, i)))
		}
	}
	return abar
}

// minRepairJitter is the smallest diagonal jitter RobustCholesky adds, and the smallest eigenvalue it keeps: the
// eps = 1e-6 of the authors' code (docs/method.md, "Anti-collapse loss L_ac").
const minRepairJitter = 1e-6

// jitterRetries is how many times RobustCholesky multiplies the jitter by ten before flooring eigenvalues:
// max(jitter, 1e-6) * 10^k for k = 0..5, so at most 0.1 when jitter <= 1e-6.
const jitterRetries = 6

// choleskyRepair says how RobustCholesky made its input factorable.
type choleskyRepair int

const (
	repairNone       choleskyRepair = iota // a itself was positive definite
	repairJitter                           // a + jitter*I was
	repairEigenFloor                       // the eigenvalues of a were raised to the floor
)

// RobustCholesky returns the lower Cholesky factor of the symmetric matrix a, repairing a when it is not
// numerically positive definite (docs/method.md, "Anti-collapse loss L_ac": growing jitter, then an eigenvalue floor):
//
//  1. factor a;
//  2. else factor a + d_k I with d_k = max(jitter, 1e-6) * 10^k, k = 0..5;
//  3. else factor V max(Lambda, f) V^T, a's eigendecomposition with eigenvalues floored at f = max(jitter, 1e-6).
//
// The returned factor is that of the first matrix that factors. It returns an error wrapping ErrNonFinite when a
// holds NaN or an infinity, or ErrNotPositiveDefinite when even the floored matrix does not factor. a is not
// modified.
func RobustCholesky(a mat.Symmetric, jitter float64) (*mat.TriDense, error) {
	l, _, err := robustCholesky(a, jitter)
	return l, err
}

func robustCholesky(a mat.Symmetric, jitter float64) (*mat.TriDense, choleskyRepair, error) {
	n := a.SymmetricDim()
	for i := range n {
		for j := i; j < n; j++ {
			if v := a.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, repairNone, fmt.Errorf("cholesky: entry (%d,%d) is %v: %w", i, j, v, ErrNonFinite)
			}
		}
	}
	var chol mat.Cholesky
	if chol.Factorize(a) {
		return choleskyFactor(&chol), repairNone, nil
	}
	base := math.Max(jitter, minRepairJitter)
	shifted := mat.NewSymDense(n, nil)
	for k := range jitterRetries {
		d := base * math.Pow(10, float64(k))
		shifted.CopySym(a)
		for i := range n {
			shifted.SetSym(i, i, shifted.At(i, i)+d)
		}
		if chol.Factorize(shifted) {
			return choleskyFactor(&chol), repairJitter, nil
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(a, true) {
		return nil, repairNone, fmt.Errorf("cholesky: eigendecomposition of %d x %d matrix failed: %w", n, n, ErrNotPositiveDefinite)
	}
	values := eig.Values(nil)
	var vectors mat.Dense
	eig.VectorsTo(&vectors)
	for i, v := range values {
		values[i] = math.Max(v, base)
	}
	floored := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			var s float64
			for k, lambda := range values {
				s += vectors.At(i, k) * lambda * vectors.At(j, k)
			}
			floored.SetSym(i, j, s)
		}
	}
	if !chol.Factorize(floored) {
		return nil, repairNone, fmt.Errorf("cholesky: %d x %d matrix with eigenvalues floored at %g: %w", n, n, base, ErrNotPositiveDefinite)
	}
	return choleskyFactor(&chol), repairEigenFloor, nil
}

func choleskyFactor(c *mat.Cholesky) *mat.TriDense {
	var l mat.TriDense
	c.LTo(&l)
	return &l
}

// symmetricPart returns (a + a^T)/2 of the square tensor a, checking that every entry is finite.
func symmetricPart(op string, a *tensor.Dense) (*mat.SymDense, error) {
	m := denseToMatrix(a)
	n, c := m.Dims()
	if n != c {
		return nil, fmt.Errorf("%s: input has shape %v, want a square matrix: %w", op, a.Shape(), ErrShape)
	}
	sym := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			v := 0.5 * (m.At(i, j) + m.At(j, i))
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s: entry (%d,%d) is %v: %w", op, i, j, v, ErrNonFinite)
			}
			sym.SetSym(i, j, v)
		}
	}
	return sym, nil
}

// denseToMatrix copies a contiguous 2-D float32 or float64 tensor into a float64 gonum matrix.
func denseToMatrix(t *tensor.Dense) *mat.Dense {
	s := t.Shape()
	out := mat.NewDense(s[0], s[1], nil)
	data := out.RawMatrix().Data
	switch src := t.Data().(type) {
	case []float32:
		for i, v := range src {
			data[i] = float64(v)
		}
	case []float64:
		copy(data, src)
	}
	return out
}

// denseFromMatrix copies a gonum matrix into a new 2-D tensor of dtype dt (float32 or float64).
func denseFromMatrix(m mat.Matrix, dt tensor.Dtype) *tensor.Dense {
	r, c := m.Dims()
	out := tensor.New(tensor.Of(dt), tensor.WithShape(r, c))
	switch dst := out.Data().(type) {
	case []float32:
		for i := range r {
			for j := range c {
				dst[i*c+j] = float32(m.At(i, j))
			}
		}
	case []float64:
		for i := range r {
			for j := range c {
				dst[i*c+j] = m.At(i, j)
			}
		}
	}
	return out
}
