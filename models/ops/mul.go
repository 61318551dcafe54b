package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MulTransposed returns x·wᵀ, the product of a linear layer whose weight is stored [out, in] as in PyTorch
// (package models' Linear):
//
//	y[n,o] = Σ_i x[n,i] · w[o,i]
//
// x is [N, in], w is [out, in], y is [N, out]; the gradients are dx = dy·w and dw = dyᵀ·x. It gives the
// result of G.Mul(x, G.Transpose(w)) without materialising wᵀ in every run, nor the transposes of its
// gradient: each of the three products is one call of the registered BLAS with a transpose flag, split across
// goroutines after UseOpenBLAS. It returns an error wrapping ErrShape if the shapes or dtypes do not fit.
func MulTransposed(x, w *G.Node) (*G.Node, error) {
	xs, ws := x.Shape(), w.Shape()
	switch {
	case xs.Dims() != 2 || ws.Dims() != 2:
		return nil, fmt.Errorf("mul transposed: %q %v and %q %v, want matrices [N,in] and [out,in]: %w", x.Name(), xs, w.Name(), ws, ErrShape)
	case xs[1] != ws[1]:
		return nil, fmt.Errorf("mul transposed: %q has %d columns, %q has %d: %w", x.Name(), xs[1], w.Name(), ws[1], ErrShape)
	case xs.TotalSize() == 0 || ws.TotalSize() == 0:
		return nil, fmt.Errorf("mul transposed: %q %v or %q %v is empty: %w", x.Name(), xs, w.Name(), ws, ErrShape)
	case x.Dtype() != w.Dtype():
		return nil, fmt.Errorf("mul transposed: %q is %v, %q is %v: %w", x.Name(), x.Dtype(), w.Name(), w.Dtype(), ErrShape)
	}
	if err := checkFloat("mul transposed", x); err != nil {
		return nil, err
	}
	return G.ApplyOp(&mulTOp{n: xs[0], in: xs[1], out: ws[0], serial: opSerial.Add(1)}, x, w)
}

// mulTOp computes y = x·wᵀ; its two gradient ops share its sizes.
type mulTOp struct {
	plainOp
	n, in, out int
	serial     uint64
	y          buffer
}

func (op *mulTOp) Arity() int    { return 2 }
func (op *mulTOp) Type() hm.Type { return hm.NewFnType(tensorType(2), tensorType(2), tensorType(2)) }
func (op *mulTOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.n, op.out}, nil
}
func (op *mulTOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *mulTOp) Hashcode() uint32      { return hashOf(op) }
func (op *mulTOp) String() string {
	return fmt.Sprintf("MulTransposed#%d{[%d,%d]·[%d,%d]ᵀ}", op.serial, op.n, op.in, op.out, op.in)
}

func (op *mulTOp) DiffWRT(int) []bool { return []bool{true, true} }

func (op *mulTOp) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	dx, err := G.ApplyOp(&mulTGradOp{fwd: op, wrtX: true}, grad, in[1])
	if err != nil {
		return nil, err
	}
	dw, err := G.ApplyOp(&mulTGradOp{fwd: op}, grad, in[0])
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx, dw}, nil
}

func (op *mulTOp) Do(vals ...G.Value) (G.Value, error) {
	x, err := denseOf("mul transposed", 0, vals[0], vals[0].Dtype(), tensor.Shape{op.n, op.in})
	if err != nil {
		return nil, err
	}
	w, err := denseOf("mul transposed", 1, vals[1], x.Dtype(), tensor.Shape{op.out, op.in})
	if err != nil {
		return nil, err
	}
	y := op.y.get(x.Dtype(), op.n, op.out)
	switch x.Dtype() {
	case tensor.Float32:
		gemm(Threads(), false, true, op.n, op.out, op.in, x.Float32s(), op.in, w.Float32s(), op.in, 0, y.Float32s(), op.out)
	case tensor.Float64:
		gemm(Threads(), false, true, op.n, op.out, op.in, x.Float64s(), op.in, w.Float64s(), op.in, 0, y.Float64s(), op.out)
	default:
		return nil, fmt.Errorf("mul transposed: dtype %v: %w", x.Dtype(), ErrShape)
	}
	return y, nil
}

// mulTGradOp computes, from dy [N,out] and the other factor, dx = dy·w [N,in] (wrtX) or dw = dyᵀ·x [out,in].
type mulTGradOp struct {
	plainOp
	fwd  *mulTOp
	wrtX bool
	out  buffer
}

func (op *mulTGradOp) Arity() int { return 2 }
func (op *mulTGradOp) Type() hm.Type {
	return hm.NewFnType(tensorType(2), tensorType(2), tensorType(2))
}
func (op *mulTGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	if op.wrtX {
		return tensor.Shape{op.fwd.n, op.fwd.in}, nil
	}
	return tensor.Shape{op.fwd.out, op.fwd.in}, nil
}
func (op *mulTGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *mulTGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *mulTGradOp) String() string {
	if op.wrtX {
		return fmt.Sprintf("MulTransposedGradX#%d", op.fwd.serial)
	}
	return fmt.Sprintf("MulTransposedGradW#%d", op.fwd.serial)
}

func (op *mulTGradOp) Do(vals ...G.Value) (G.Value, error) {
	f := op.fwd
	dy, err := denseOf("mul transposed gradient", 0, vals[0], vals[0].Dtype(), tensor.Shape{f.n, f.out})
	if err != nil {
		return nil, err
	}
	other := tensor.Shape{f.n, f.in} // x, for dw
	if op.wrtX {
		other = tensor.Shape{f.out, f.in} // w, for dx
	}
	b, err := denseOf("mul transposed gradient", 1, vals[1], dy.Dtype(), other)
	if err != nil {
		return nil, err
	}
	shape, _ := op.InferShape()
	d := op.out.get(dy.Dtype(), shape...)
	switch dy.Dtype() {
	case tensor.Float32:
		mulTGrad(f, op.wrtX, dy.Float32s(), b.Float32s(), d.Float32s())
	case tensor.Float64:
		mulTGrad(f, op.wrtX, dy.Float64s(), b.Float64s(), d.Float64s())
	default:
		return nil, fmt.Errorf("mul transposed gradient: dtype %v: %w", dy.Dtype(), ErrShape)
	}
	return d, nil
}

// mulTGrad writes dx = dy·w (wrtX, b = w) or dw = dyᵀ·x (b = x) to d.
func mulTGrad[T float](f *mulTOp, wrtX bool, dy, b, d []T) {
	if wrtX {
		gemm(Threads(), false, false, f.n, f.in, f.out, dy, f.out, b, f.in, 0, d, f.in)
		return
	}
	gemm(Threads(), true, false, f.out, f.in, f.n, dy, f.out, b, f.in, 0, d, f.in)
}
