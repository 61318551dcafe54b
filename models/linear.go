package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/bicyc/bicyc/models/ops"
	"github.com/bicyc/bicyc/safetensors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Linear is a fully connected layer with PyTorch's nn.Linear layout, used for the per-task heads (docs/method.md,
// "Networks": a new Linear(S -> task classes) per task) and inside Mapper:
//
//	y = x W^T + b,   x [N,in], W [out,in], b [out], y [N,out]
//
// Its tensors are float32 and owned by the Linear; every graph built from it binds the same tensors, so a solver
// step through one graph is seen by all of them. A Linear is not safe for concurrent use.
type Linear struct {
	in, out    int
	weight     *tensor.Dense // [out,in]
	bias       *tensor.Dense // [out], nil without bias
	nodePrefix string
}

// NewLinear returns a Linear from in to out features, with or without bias, initialised as PyTorch's
// nn.Linear.reset_parameters does (kaiming-uniform with a = sqrt 5, which reduces to):
//
//	W, b ~ U(-1/sqrt(in), 1/sqrt(in))
//
// It panics if in or out is not positive or rng is nil.
func NewLinear(in, out int, bias bool, rng *rand.Rand) *Linear {
	if rng == nil {
		panic("models: NewLinear with a nil rng")
	}
	l := newLinear(in, out, bias)
	bound := 1 / math.Sqrt(float64(in))
	fill := uniformFill(rng, bound)
	for _, p := range l.params() {
		data := p.value.Data().([]float32)
		for i := range data {
			data[i] = fill()
		}
	}
	return l
}

// newLinear returns a zero Linear.
func newLinear(in, out int, bias bool) *Linear {
	if in <= 0 || out <= 0 {
		panic(fmt.Sprintf("models: Linear with %d inputs and %d outputs", in, out))
	}
	l := &Linear{in: in, out: out, weight: newTensor(nil, out, in), nodePrefix: newNodePrefix("linear")}
	if bias {
		l.bias = newTensor(nil, out)
	}
	return l
}

// In returns the number of input features.
func (l *Linear) In() int { return l.in }

// Out returns the number of output features.
func (l *Linear) Out() int { return l.out }

// HasBias reports whether the layer adds a bias.
func (l *Linear) HasBias() bool { return l.bias != nil }

// params returns the trainable tensors with their state names: weight, then bias.
func (l *Linear) params() []namedParam {
	ps := []namedParam{{"weight", l.weight}}
	if l.bias != nil {
		ps = append(ps, namedParam{"bias", l.bias})
	}
	return ps
}

// Params returns the layer's own trainable tensors (not copies): weight [out,in], then bias [out] if any.
func (l *Linear) Params() []*tensor.Dense {
	return paramValues(l.params())
}

// NumParams returns the number of trainable scalars: out*in, plus out with bias.
func (l *Linear) NumParams() int { return countParams(l.params()) }

// Build adds y = x W^T + b to the graph of x, a float32 [N,in] node, and returns y [N,out] with the parameter
// nodes (weight, then bias).
func (l *Linear) Build(g *G.ExprGraph, x *G.Node) (*Built, error) {
	if err := checkInput("linear", x, -1, l.in); err != nil {
		return nil, err
	}
	params := bindParams(g, l.nodePrefix, l.params())
	y, err := l.apply(x, params)
	if err != nil {
		return nil, err
	}
	return &Built{Output: y, Params: params}, nil
}

// apply computes x W^T (+ b) from the nodes bindParams made for l.params().
func (l *Linear) apply(x *G.Node, params G.Nodes) (*G.Node, error) {
	// MulTransposed multiplies by W^T without materialising the transpose.
	y, err := ops.MulTransposed(x, params[0])
	if err != nil {
		return nil, fmt.Errorf("linear: %w", err)
	}
	if l.bias != nil {
		if y, err = ops.AddChannelBias(y, params[1]); err != nil {
			return nil, fmt.Errorf("linear: %w", err)
		}
	}
	return y, nil
}

// State returns copies of the tensors named prefix+"weight" [out,in] and, with bias, prefix+"bias" [out].
func (l *Linear) State(prefix string) []safetensors.Tensor {
	var out []safetensors.Tensor
	for _, p := range l.params() {
		out = append(out, stateTensor(prefix+p.name, p.value.Shape(), p.value.Data().([]float32)))
	}
	return out
}

// SetState copies prefix+"weight" and prefix+"bias" from tensors into the layer, in place, so graphs already
// built see the new values. Tensors whose names do not start with prefix are ignored; any other tensor under
// prefix is unexpected. On error (wrapping ErrBadState and naming each bad tensor) the layer is unchanged.
func (l *Linear) SetState(prefix string, tensors []safetensors.Tensor) error {
	r := newStateReader("linear", tensors, prefix)
	r.readParams(prefix, l.params())
	return r.commit()
}

// Clone returns a deep copy of the layer, with its own tensors.
func (l *Linear) Clone() *Linear {
	return &Linear{in: l.in, out: l.out, weight: cloneTensor(l.weight), bias: cloneTensor(l.bias),
		nodePrefix: newNodePrefix("linear")}
}
