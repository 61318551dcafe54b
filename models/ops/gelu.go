package ops

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// GELU applies the exact Gaussian error linear unit elementwise, the non-linearity of the distiller D and
// adapter A (METHOD.md "Networks": "GELU (exact, erf)"):
//
//	gelu(x)  = x * Phi(x) = x * 0.5 * (1 + erf(x / sqrt 2))
//	gelu'(x) = Phi(x) + x * phi(x),   phi(x) = exp(-x^2/2) / sqrt(2 pi)
//
// x may have any shape and must be float32 or float64; the result has the shape and dtype of x. Each element is
// computed in float64 and rounded once, so float32 results are correctly rounded to within one ulp.
func GELU(x *G.Node) (*G.Node, error) {
	if err := requireFloatNode("gelu", x); err != nil {
		return nil, err
	}
	return G.ApplyOp(geluOp{}, x)
}

// geluOp is the forward GELU: y = x * Phi(x).
type geluOp struct{}

func (geluOp) Arity() int { return 1 }

func (geluOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}

func (geluOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return inferredShape("gelu", in[0])
}

func (geluOp) Do(in ...G.Value) (G.Value, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("gelu: got %d inputs, want 1", len(in))
	}
	x, err := floatDenseValue("gelu", in[0])
	if err != nil {
		return nil, err
	}
	y := tensor.New(tensor.Of(x.Dtype()), tensor.WithShape(x.Shape().Clone()...))
	switch xs := x.Data().(type) {
	case []float32:
		geluForward(y.Data().([]float32), xs)
	case []float64:
		geluForward(y.Data().([]float64), xs)
	}
	return y, nil
}

func (geluOp) ReturnsPtr() bool      { return false }
func (geluOp) CallsExtern() bool     { return false }
func (geluOp) OverwritesInput() int  { return -1 }
func (geluOp) WriteHash(h hash.Hash) { fmt.Fprint(h, "bicyc.GELU") }
func (op geluOp) Hashcode() uint32   { return hashByText(op) }
func (geluOp) String() string        { return "GELU" }

// DiffWRT reports that GELU is differentiable with respect to its input.
func (geluOp) DiffWRT(inputs int) []bool { return []bool{true} }

// SymDiff returns dx = grad * gelu'(x).
func (geluOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != 1 {
		return nil, fmt.Errorf("gelu: differentiating %d inputs, want 1", len(inputs))
	}
	dx, err := G.ApplyOp(geluDiffOp{}, inputs[0], grad)
	if err != nil {
		return nil, fmt.Errorf("gelu: building gradient: %w", err)
	}
	return G.Nodes{dx}, nil
}

// geluDiffOp computes grad * gelu'(x) from (x, grad), both of the shape of x.
type geluDiffOp struct{}

func (geluDiffOp) Arity() int { return 2 }

func (geluDiffOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a)
}

func (geluDiffOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return inferredShape("gelu gradient", in[0])
}

func (geluDiffOp) Do(in ...G.Value) (G.Value, error) {
	if len(in) != 2 {
		return nil, fmt.Errorf("gelu gradient: got %d inputs, want 2", len(in))
	}
	x, err := floatDenseValue("gelu gradient", in[0])
	if err != nil {
		return nil, err
	}
	grad, err := floatDenseValue("gelu gradient", in[1])
	if err != nil {
		return nil, err
	}
	if !x.Shape().Eq(grad.Shape()) || x.Dtype() != grad.Dtype() {
		return nil, fmt.Errorf("gelu gradient: input %v %v and gradient %v %v differ: %w", x.Shape(), x.Dtype(), grad.Shape(), grad.Dtype(), ErrShape)
	}
	dx := tensor.New(tensor.Of(x.Dtype()), tensor.WithShape(x.Shape().Clone()...))
	switch xs := x.Data().(type) {
	case []float32:
		geluBackward(dx.Data().([]float32), xs, grad.Data().([]float32))
	case []float64:
		geluBackward(dx.Data().([]float64), xs, grad.Data().([]float64))
	}
	return dx, nil
}

func (geluDiffOp) ReturnsPtr() bool      { return false }
func (geluDiffOp) CallsExtern() bool     { return false }
func (geluDiffOp) OverwritesInput() int  { return -1 }
func (geluDiffOp) WriteHash(h hash.Hash) { fmt.Fprint(h, "bicyc.GELUDiff") }
func (op geluDiffOp) Hashcode() uint32   { return hashByText(op) }
func (geluDiffOp) String() string        { return "GELUDiff" }

// geluMinWork is the number of elements per goroutine below which splitting the loop costs more than it saves
// (an erf costs about 10 ns, a goroutine about 1 us).
const geluMinWork = 16384

func geluForward[T float32 | float64](y, x []T) {
	parallelFor(len(x), geluMinWork, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v := float64(x[i])
			y[i] = T(v * 0.5 * (1 + math.Erf(v/math.Sqrt2)))
		}
	})
}

func geluBackward[T float32 | float64](dx, x, grad []T) {
	invSqrt2Pi := 1 / math.Sqrt(2*math.Pi)
	parallelFor(len(x), geluMinWork, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			v := float64(x[i])
			cdf := 0.5 * (1 + math.Erf(v/math.Sqrt2))
			pdf := invSqrt2Pi * math.Exp(-0.5*v*v)
			dx[i] = T(float64(grad[i]) * (cdf + v*pdf))
		}
	})
}

// requireFloatNode returns an error unless n holds float32 or float64 values.
func requireFloatNode(op string, n *G.Node) error {
	if n == nil {
		return fmt.Errorf("%s: nil input node: %w", op, ErrShape)
	}
	if dt := n.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
		return fmt.Errorf("%s: input %q has dtype %v, want float32 or float64: %w", op, n.Name(), dt, ErrShape)
	}
	return nil
}

// inferredShape returns a copy of the shape gorgonia passes to InferShape.
func inferredShape(op string, d G.DimSizer) (tensor.Shape, error) {
	s, ok := d.(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("%s: input shape is %T, want tensor.Shape: %w", op, d, ErrShape)
	}
	return s.Clone(), nil
}

// floatDenseValue returns v as a contiguous float32 or float64 *tensor.Dense. Views are materialised into a copy, so
// the result's Data() is always laid out row-major in the order of its shape.
func floatDenseValue(op string, v G.Value) (*tensor.Dense, error) {
	d, ok := v.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("%s: input is %T, want *tensor.Dense: %w", op, v, ErrShape)
	}
	if dt := d.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, fmt.Errorf("%s: input has dtype %v, want float32 or float64: %w", op, dt, ErrShape)
	}
	if d.IsMaterializable() {
		m, ok := d.Materialize().(*tensor.Dense)
		if !ok {
			return nil, fmt.Errorf("%s: cannot materialise a view of %v", op, d.Shape())
		}
		return m, nil
	}
	return d, nil
}

// hashByText hashes an op by its WriteHash text, as gorgonia's own ops do.
func hashByText(op interface{ WriteHash(hash.Hash) }) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}
