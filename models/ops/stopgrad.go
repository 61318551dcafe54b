package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// StopGradient returns a copy of x through which no gradient flows: the forward value equals x, and symbolic
// differentiation treats the result as a constant (the "sg" / detach of docs/method.md, "Stage I", e.g.
// L_o2n = MSE(A(z_old), sg z_new)).
//
// x may have any shape and must be float32 or float64. Gradients still reach x through every other path from the
// cost; if the stopped path is the only one, G.Grad reports x as not differentiable.
func StopGradient(x *G.Node) (*G.Node, error) {
	if err := requireFloatNode("stop gradient", x); err != nil {
		return nil, err
	}
	return G.ApplyOp(stopGradientOp{}, x)
}

// stopGradientOp is the identity with a zero (absent) derivative.
type stopGradientOp struct{}

func (stopGradientOp) Arity() int { return 1 }

func (stopGradientOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}

func (stopGradientOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return inferredShape("stop gradient", in[0])
}

// Do copies x rather than aliasing it, because gorgonia may reuse or overwrite an op's output buffer on later runs.
func (stopGradientOp) Do(in ...G.Value) (G.Value, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("stop gradient: got %d inputs, want 1", len(in))
	}
	x, err := floatDenseValue("stop gradient", in[0])
	if err != nil {
		return nil, err
	}
	return x.Clone().(*tensor.Dense), nil
}

func (stopGradientOp) ReturnsPtr() bool      { return false }
func (stopGradientOp) CallsExtern() bool     { return false }
func (stopGradientOp) OverwritesInput() int  { return -1 }
func (stopGradientOp) WriteHash(h hash.Hash) { fmt.Fprint(h, "bicyc.StopGradient") }
func (op stopGradientOp) Hashcode() uint32   { return hashByText(op) }
func (stopGradientOp) String() string        { return "StopGradient" }

// DiffWRT reports that no gradient flows to the input.
func (stopGradientOp) DiffWRT(inputs int) []bool { return []bool{false} }

// SymDiff returns no gradient node: gorgonia only asks for it because the output lies on a differentiated path,
// and DiffWRT makes it discard the (nil) input gradient.
func (stopGradientOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	return make(G.Nodes, len(inputs)), nil
}
