package ops

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// AntiCollapseOptions are the constants of the robust anti-collapse loss (paper eq. "L_ac^rob", docs/method.md, "Anti-collapse loss L_ac").
type AntiCollapseOptions struct {
	// Beta caps each Cholesky diagonal entry, so only directions whose standard deviation is below Beta are
	// pushed up (docs/method.md: beta = 1). It must be positive.
	Beta float64
	// Shrink is kappa, the weight of the trace shrinkage kappa*tr(Sigma)/S*I (authors' code: 0). It must be >= 0.
	Shrink float64
	// Jitter is eps, added to the diagonal before factoring (authors' code: 1e-6). It must be >= 0; it is also the
	// starting point of the repair jitter and the eigenvalue floor of RobustCholesky.
	Jitter float64
}

// DefaultAntiCollapseOptions returns the authors' code defaults (docs/method.md, "Anti-collapse loss L_ac"): beta 1, kappa 0, eps 1e-6.
func DefaultAntiCollapseOptions() AntiCollapseOptions {
	return AntiCollapseOptions{Beta: 1, Shrink: 0, Jitter: 1e-6}
}

// Validate returns an error naming the first option out of range.
func (o AntiCollapseOptions) Validate() error {
	switch {
	case !(o.Beta > 0) || math.IsInf(o.Beta, 0):
		return fmt.Errorf("anti-collapse: beta %v must be positive and finite", o.Beta)
	case !(o.Shrink >= 0) || math.IsInf(o.Shrink, 0):
		return fmt.Errorf("anti-collapse: shrink (kappa) %v must be >= 0 and finite", o.Shrink)
	case !(o.Jitter >= 0) || math.IsInf(o.Jitter, 0):
		return fmt.Errorf("anti-collapse: jitter (eps) %v must be >= 0 and finite", o.Jitter)
	}
	return nil
}

// AntiCollapse returns the scalar robust anti-collapse loss of the features z [B,S] (B samples, S dimensions;
// float32 or float64; the result has z's dtype). Paper, "Pitfall of anti-collapse loss", and docs/method.md, "Anti-collapse loss L_ac":
//
//	zc     = z - mean over the batch
//	Sigma  = zc^T zc / (B-1)                                  unbiased covariance, symmetric by construction
//	Sigma^ = Sigma + (kappa * tr(Sigma) / S + eps) * I
//	L      = chol(Sigma^)                                     RobustCholesky: growing jitter, then eigenvalue floor
//	loss   = -(1/S) * sum_i min(L_ii, beta)
//
// When B <= S the covariance is singular, so the diagonal approximation is used instead (paper:
// Sigma^_diag = diag(diag(Sigma^))): L_ii = sqrt(Sigma^_ii), with Sigma^_ii floored at max(eps, 1e-6).
//
// The gradient is exact for the factored matrix: Murray's Cholesky backward (see Cholesky) through Sigma^ and the
// covariance to z, with the min clamping the gradient to zero where L_ii > beta:
//
//	Lbar     = diag(-(1/S) * [L_ii <= beta])
//	Sigmabar = chol_backward(L, Lbar) + (kappa/S) * tr(chol_backward(L, Lbar)) * I
//	zbar     = 2/(B-1) * zc Sigmabar
//
// A repair (jitter or eigenvalue floor) is treated as a constant shift: its own derivative is ignored. B must be
// at least 2. Running the graph fails with an error wrapping ErrNonFinite when z holds NaN or an infinity.
func AntiCollapse(z *G.Node, opts AntiCollapseOptions) (*G.Node, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := requireFloatNode("anti-collapse", z); err != nil {
		return nil, err
	}
	s := z.Shape()
	if s.Dims() != 2 || s[0] < 2 || s[1] < 1 {
		return nil, fmt.Errorf("anti-collapse: features %q have shape %v, want [B,S] with B >= 2: %w", z.Name(), s, ErrShape)
	}
	return G.ApplyOp(antiCollapseOp{opts: opts}, z)
}

// antiCollapseOp maps z [B,S] to the scalar loss.
type antiCollapseOp struct{ opts AntiCollapseOptions }

func (antiCollapseOp) Arity() int { return 1 }

func (antiCollapseOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(G.TensorType{Dims: 2, Of: a}, a)
}

func (antiCollapseOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return tensor.ScalarShape(), nil
}

func (op antiCollapseOp) Do(in ...G.Value) (G.Value, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("anti-collapse: got %d inputs, want 1", len(in))
	}
	z, err := floatDenseValue("anti-collapse", in[0])
	if err != nil {
		return nil, err
	}
	f, err := antiCollapseForward(z, op.opts)
	if err != nil {
		return nil, err
	}
	if z.Dtype() == tensor.Float32 {
		return G.NewF32(float32(f.loss)), nil
	}
	return G.NewF64(f.loss), nil
}

func (antiCollapseOp) ReturnsPtr() bool     { return false }
func (antiCollapseOp) CallsExtern() bool    { return false }
func (antiCollapseOp) OverwritesInput() int { return -1 }

// WriteHash includes the options, so that gorgonia never merges two losses with different constants.
func (op antiCollapseOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "bicyc.AntiCollapse%s", op.params()) }
func (op antiCollapseOp) Hashcode() uint32      { return hashByText(op) }
func (op antiCollapseOp) String() string        { return "AntiCollapse" + op.params() }

func (op antiCollapseOp) params() string {
	return fmt.Sprintf("{beta=%v,kappa=%v,eps=%v}", op.opts.Beta, op.opts.Shrink, op.opts.Jitter)
}

// DiffWRT reports that the loss is differentiable with respect to the features.
func (antiCollapseOp) DiffWRT(inputs int) []bool { return []bool{true} }

// SymDiff returns zbar from z and the scalar gradient of the loss.
func (op antiCollapseOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != 1 {
		return nil, fmt.Errorf("anti-collapse: differentiating %d inputs, want 1", len(inputs))
	}
	zbar, err := G.ApplyOp(antiCollapseDiffOp(op), inputs[0], grad)
	if err != nil {
		return nil, fmt.Errorf("anti-collapse: building gradient: %w", err)
	}
	return G.Nodes{zbar}, nil
}

// antiCollapseDiffOp maps (z, scalar gradient) to zbar [B,S]. It recomputes the forward pass, which costs
// O(B S^2 + S^3), small next to the backbone, instead of keeping state in the op between runs.
type antiCollapseDiffOp struct{ opts AntiCollapseOptions }

func (antiCollapseDiffOp) Arity() int { return 2 }

func (antiCollapseDiffOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	m := G.TensorType{Dims: 2, Of: a}
	return hm.NewFnType(m, a, m)
}

func (antiCollapseDiffOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return inferredShape("anti-collapse gradient", in[0])
}

func (op antiCollapseDiffOp) Do(in ...G.Value) (G.Value, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("anti-collapse gradient: got %d inputs, want 2", len(in))
	}
	z, err := floatDenseValue("anti-collapse gradient", in[0])
	if err != nil {
		return nil, err
	}
	g, err := scalarFloat("anti-collapse gradient", in[1])
	if err != nil {
		return nil, err
	}
	f, err := antiCollapseForward(z, op.opts)
	if err != nil {
		return nil, err
	}
	return denseFromMatrix(f.backward(g), z.Dtype()), nil
}

func (antiCollapseDiffOp) ReturnsPtr() bool     { return false }
func (antiCollapseDiffOp) CallsExtern() bool    { return false }
func (antiCollapseDiffOp) OverwritesInput() int { return -1 }
func (op antiCollapseDiffOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "bicyc.AntiCollapseDiff%s", antiCollapseOp(op).params())
}
func (op antiCollapseDiffOp) Hashcode() uint32 { return hashByText(op) }
func (op antiCollapseDiffOp) String() string   { return "AntiCollapseDiff" + antiCollapseOp(op).params() }

// antiCollapseState is the forward pass of the loss, kept for its backward pass.
type antiCollapseState struct {
	opts     AntiCollapseOptions
	zc       *mat.Dense    // centred features, [B,S]
	diagonal bool          // the B <= S diagonal approximation was used
	l        *mat.TriDense // Cholesky factor of Sigma^ (full covariance only)
	lDiag    []float64     // L_ii
	loss     float64
}

// antiCollapseForward computes the loss of z [B,S] in float64.
func antiCollapseForward(z *tensor.Dense, opts AntiCollapseOptions) (*antiCollapseState, error) {
	if s := z.Shape(); s.Dims() != 2 || s[0] < 2 {
		return nil, fmt.Errorf("anti-collapse: features have shape %v, want [B,S] with B >= 2: %w", s, ErrShape)
	}
	zc := denseToMatrix(z)
	b, s := zc.Dims()
	for i := range b {
		for j := range s {
			if v := zc.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("anti-collapse: feature z[%d,%d] is %v: %w", i, j, v, ErrNonFinite)
			}
		}
	}
	for j := range s {
		var mean float64
		for i := range b {
			mean += zc.At(i, j)
		}
		mean /= float64(b)
		for i := range b {
			zc.Set(i, j, zc.At(i, j)-mean)
		}
	}
	st := &antiCollapseState{opts: opts, zc: zc, lDiag: make([]float64, s)}
	if b <= s {
		st.diagonal = true
		variances := make([]float64, s)
		var trace float64
		for j := range s {
			var v float64
			for i := range b {
				v += zc.At(i, j) * zc.At(i, j)
			}
			variances[j] = v / float64(b-1)
			trace += variances[j]
		}
		shift := opts.Shrink*trace/float64(s) + opts.Jitter
		floor := math.Max(opts.Jitter, minRepairJitter)
		for j, v := range variances {
			st.lDiag[j] = math.Sqrt(math.Max(v+shift, floor))
		}
	} else {
		sigma := mat.NewSymDense(s, nil)
		sigma.SymOuterK(1/float64(b-1), zc.T())
		shift := opts.Shrink*mat.Trace(sigma)/float64(s) + opts.Jitter
		for j := range s {
			sigma.SetSym(j, j, sigma.At(j, j)+shift)
		}
		l, err := RobustCholesky(sigma, opts.Jitter)
		if err != nil {
			return nil, fmt.Errorf("anti-collapse: covariance of %d x %d features: %w", b, s, err)
		}
		st.l = l
		for j := range s {
			st.lDiag[j] = l.At(j, j)
		}
	}
	for _, d := range st.lDiag {
		st.loss -= math.Min(d, opts.Beta)
	}
	st.loss /= float64(s)
	return st, nil
}

// backward returns zbar [B,S] for the scalar loss gradient g.
func (st *antiCollapseState) backward(g float64) *mat.Dense {
	b, s := st.zc.Dims()
	// lbar_i = d loss / d L_ii; zero where min() picked beta.
	lbar := make([]float64, s)
	for i, d := range st.lDiag {
		if d <= st.opts.Beta {
			lbar[i] = -g / float64(s)
		}
	}
	sigmaHatBar := mat.NewSymDense(s, nil)
	if st.diagonal {
		for i, d := range st.lDiag {
			sigmaHatBar.SetSym(i, i, lbar[i]/(2*d))
		}
	} else {
		sigmaHatBar = choleskyBackward(st.l, mat.NewDiagDense(s, lbar))
	}
	// Sigma^ = Sigma + kappa*tr(Sigma)/S*I + eps*I, so Sigmabar = Sigma^bar + kappa/S*tr(Sigma^bar)*I.
	if st.opts.Shrink != 0 {
		add := st.opts.Shrink / float64(s) * mat.Trace(sigmaHatBar)
		for i := range s {
			sigmaHatBar.SetSym(i, i, sigmaHatBar.At(i, i)+add)
		}
	}
	// Sigma = zc^T zc/(B-1) with symmetric Sigmabar gives zcbar = 2/(B-1) zc Sigmabar; its columns already sum to
	// zero, so the centring adds nothing.
	var zbar mat.Dense
	zbar.Mul(st.zc, sigmaHatBar)
	zbar.Scale(2/float64(b-1), &zbar)
	return &zbar
}

// scalarFloat reads a scalar value (a gorgonia scalar or a one-element tensor) as float64.
func scalarFloat(op string, v G.Value) (float64, error) {
	switch d := v.Data().(type) {
	case float32:
		return float64(d), nil
	case float64:
		return d, nil
	case []float32:
		if len(d) == 1 {
			return float64(d[0]), nil
		}
	case []float64:
		if len(d) == 1 {
			return d[0], nil
		}
	}
	return 0, fmt.Errorf("%s: gradient %v is not a float scalar: %w", op, v.Shape(), ErrShape)
}
