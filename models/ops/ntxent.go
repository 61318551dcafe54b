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

// NTXent returns the scalar normalised-temperature cross-entropy (NT-Xent, SimCLR: Chen et al. 2020) of the
// projections z [R,P] (float32 or float64; the result has z's dtype), whose rows come in positive pairs: row
// 2k and row 2k+1 are two views of one image, and every other row of the batch is a negative of both:
//
//	u_r    = z_r / sqrt(|z_r|^2 + 1e-12)                     rows normalised (the floor keeps the gradient finite)
//	s_rk   = u_r . u_k / temperature
//	loss   = (1/R) sum_r [ log sum_{k != r} exp(s_rk) - s_{r,p(r)} ]   p(r) = r XOR 1
//
// The gradient is exact: with P_rk the softmax of row r over k != r, Gbar_rk = (P_rk - [k = p(r)]) / (R
// temperature), ubar = (Gbar + Gbar^T) U and zbar_r = (ubar_r - u_r (u_r . ubar_r)) / |z_r|. R must be even
// and at least 4 (a pair and a negative), temperature positive. Running the graph fails with an error wrapping
// ErrNonFinite when z holds NaN or an infinity. It is computed in float64 whatever z's dtype: O(R^2 P), small
// next to the backbone at the batch sizes of Stage I.
func NTXent(z *G.Node, temperature float64) (*G.Node, error) {
	if err := requireFloatNode("nt-xent", z); err != nil {
		return nil, err
	}
	if !(temperature > 0) || math.IsInf(temperature, 0) {
		return nil, fmt.Errorf("nt-xent: temperature %v must be positive and finite", temperature)
	}
	s := z.Shape()
	if s.Dims() != 2 || s[0] < 4 || s[0]%2 != 0 || s[1] < 1 {
		return nil, fmt.Errorf("nt-xent: projections %q have shape %v, want [R,P] with R even and >= 4: %w", z.Name(), s, ErrShape)
	}
	return G.ApplyOp(ntXentOp{temperature: temperature}, z)
}

// ntXentOp maps z [R,P] to the scalar loss.
type ntXentOp struct{ temperature float64 }

func (ntXentOp) Arity() int { return 1 }

func (ntXentOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(G.TensorType{Dims: 2, Of: a}, a)
}

func (ntXentOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return tensor.ScalarShape(), nil }

func (op ntXentOp) Do(in ...G.Value) (G.Value, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("nt-xent: got %d inputs, want 1", len(in))
	}
	z, err := floatDenseValue("nt-xent", in[0])
	if err != nil {
		return nil, err
	}
	f, err := ntXentForward(z, op.temperature)
	if err != nil {
		return nil, err
	}
	if z.Dtype() == tensor.Float32 {
		return G.NewF32(float32(f.loss)), nil
	}
	return G.NewF64(f.loss), nil
}

func (ntXentOp) ReturnsPtr() bool     { return false }
func (ntXentOp) CallsExtern() bool    { return false }
func (ntXentOp) OverwritesInput() int { return -1 }

// WriteHash includes the temperature, so that gorgonia never merges two losses with different constants.
func (op ntXentOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "bicyc.NTXent{t=%v}", op.temperature) }
func (op ntXentOp) Hashcode() uint32      { return hashByText(op) }
func (op ntXentOp) String() string        { return fmt.Sprintf("NTXent{t=%v}", op.temperature) }

// DiffWRT reports that the loss is differentiable with respect to the projections.
func (ntXentOp) DiffWRT(inputs int) []bool { return []bool{true} }

// SymDiff returns zbar from z and the scalar gradient of the loss.
func (op ntXentOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != 1 {
		return nil, fmt.Errorf("nt-xent: differentiating %d inputs, want 1", len(inputs))
	}
	zbar, err := G.ApplyOp(ntXentDiffOp(op), inputs[0], grad)
	if err != nil {
		return nil, fmt.Errorf("nt-xent: building gradient: %w", err)
	}
	return G.Nodes{zbar}, nil
}

// ntXentDiffOp maps (z, scalar gradient) to zbar [R,P]. It recomputes the forward pass (O(R^2 P)) instead of
// keeping state in the op between runs.
type ntXentDiffOp struct{ temperature float64 }

func (ntXentDiffOp) Arity() int { return 2 }

func (ntXentDiffOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	m := G.TensorType{Dims: 2, Of: a}
	return hm.NewFnType(m, a, m)
}

func (ntXentDiffOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return inferredShape("nt-xent gradient", in[0])
}

func (op ntXentDiffOp) Do(in ...G.Value) (G.Value, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("nt-xent gradient: got %d inputs, want 2", len(in))
	}
	z, err := floatDenseValue("nt-xent gradient", in[0])
	if err != nil {
		return nil, err
	}
	g, err := scalarFloat("nt-xent gradient", in[1])
	if err != nil {
		return nil, err
	}
	f, err := ntXentForward(z, op.temperature)
	if err != nil {
		return nil, err
	}
	return denseFromMatrix(mat.NewDense(f.rows, f.dim, f.backward(g)), z.Dtype()), nil
}

func (ntXentDiffOp) ReturnsPtr() bool     { return false }
func (ntXentDiffOp) CallsExtern() bool    { return false }
func (ntXentDiffOp) OverwritesInput() int { return -1 }
func (op ntXentDiffOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "bicyc.NTXentDiff{t=%v}", op.temperature)
}
func (op ntXentDiffOp) Hashcode() uint32 { return hashByText(op) }
func (op ntXentDiffOp) String() string   { return fmt.Sprintf("NTXentDiff{t=%v}", op.temperature) }

// ntXentState is the forward pass of the loss, kept for its backward pass.
type ntXentState struct {
	rows, dim   int
	temperature float64
	u           []float64 // normalised rows, [R,P]
	norm        []float64 // |z_r| with the floor
	prob        []float64 // softmax of each row over the other rows, [R,R], zero on the diagonal
	loss        float64
}

// ntXentForward computes the loss of z [R,P] in float64.
func ntXentForward(z *tensor.Dense, temperature float64) (*ntXentState, error) {
	s := z.Shape()
	if s.Dims() != 2 || s[0] < 4 || s[0]%2 != 0 {
		return nil, fmt.Errorf("nt-xent: projections have shape %v, want [R,P] with R even and >= 4: %w", s, ErrShape)
	}
	r, p := s[0], s[1]
	st := &ntXentState{rows: r, dim: p, temperature: temperature, u: denseToMatrix(z).RawMatrix().Data, norm: make([]float64, r), prob: make([]float64, r*r)}
	for i, v := range st.u {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("nt-xent: projection z[%d,%d] is %v: %w", i/p, i%p, v, ErrNonFinite)
		}
	}
	for i := range r {
		row := st.u[i*p : (i+1)*p]
		var ss float64
		for _, v := range row {
			ss += v * v
		}
		st.norm[i] = math.Sqrt(ss + 1e-12)
		for j := range row {
			row[j] /= st.norm[i]
		}
	}
	for i := range r {
		ui, pi := st.u[i*p:(i+1)*p], st.prob[i*r:(i+1)*r]
		biggest := math.Inf(-1)
		for k := range r {
			if k == i {
				continue
			}
			var dot float64
			for j, v := range st.u[k*p : (k+1)*p] {
				dot += ui[j] * v
			}
			pi[k] = dot / temperature
			biggest = math.Max(biggest, pi[k])
		}
		var sum float64
		for k := range r {
			if k != i {
				sum += math.Exp(pi[k] - biggest)
			}
		}
		lse := biggest + math.Log(sum)
		st.loss += lse - pi[i^1]
		for k := range r {
			if k != i {
				pi[k] = math.Exp(pi[k] - lse)
			}
		}
	}
	st.loss /= float64(r)
	return st, nil
}

// backward returns zbar [R,P] (row-major) for the scalar loss gradient g.
func (st *ntXentState) backward(g float64) []float64 {
	r, p := st.rows, st.dim
	scale := g / (float64(r) * st.temperature)
	// gs = Gbar + Gbar^T, Gbar_ik = scale * (P_ik - [k = i^1]).
	gs := make([]float64, r*r)
	for i := range r {
		for k := range r {
			v := st.prob[i*r+k]
			if k == i^1 {
				v--
			}
			gs[i*r+k] += scale * v
			gs[k*r+i] += scale * v
		}
	}
	zbar := make([]float64, r*p)
	for i := range r {
		ub := zbar[i*p : (i+1)*p]
		for k := range r {
			if w := gs[i*r+k]; w != 0 {
				for j, v := range st.u[k*p : (k+1)*p] {
					ub[j] += w * v
				}
			}
		}
		ui := st.u[i*p : (i+1)*p]
		var dot float64
		for j := range ub {
			dot += ui[j] * ub[j]
		}
		for j := range ub {
			ub[j] = (ub[j] - ui[j]*dot) / st.norm[i]
		}
	}
	return zbar
}
