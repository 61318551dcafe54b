package models

import (
	"fmt"
	"math/rand/v2"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/models/ops"
	"github.com/bicyc/bicyc/safetensors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// DefaultHiddenMult is the hidden width of arch.MLP in multiples of S (docs/method.md: Linear(S -> 32S)).
const DefaultHiddenMult = 32

// Mapper is a map between two S-dimensional feature spaces: the distiller D (new -> old) and the adapter A
// (old -> new) of docs/method.md, both created fresh at the start of every task t > 1. Input and output are [N,S].
//
// Its tensors are float32 and owned by the Mapper; every graph built from it binds the same tensors, so a
// solver step through one graph is seen by all of them. A Mapper is not safe for concurrent use.
type Mapper struct {
	kind       arch.Mapper
	dim        int
	hiddenMult int       // arch.MLP and arch.ResidualMLP only
	layers     []*Linear // fc1, fc2 for arch.MLP and arch.ResidualMLP; the single map for the linear kinds
	prefixes   []string  // state name prefix of each layer: "fc1.", "fc2." or ""
}

// NewMapper returns a mapper of the given kind on s features. For arch.MLP the hidden layer has hiddenMult*s
// units (DefaultHiddenMult in the paper); arch.Linear and arch.LinearBias ignore hiddenMult. Layers are
// initialised as PyTorch's nn.Linear (see NewLinear; arch.LinearBias draws the weight as arch.Linear does, then
// the bias), except arch.ResidualMLP's fc2, which starts at zero. It returns an error for an unknown kind or
// non-positive sizes, and panics if rng is nil.
func NewMapper(kind arch.Mapper, s, hiddenMult int, rng *rand.Rand) (*Mapper, error) {
	if rng == nil {
		panic("models: NewMapper with a nil rng")
	}
	if err := checkMapperSizes(kind, s, hiddenMult); err != nil {
		return nil, err
	}
	m := newMapper(kind, s, hiddenMult, func(in, out int, bias bool) *Linear {
		return NewLinear(in, out, bias, rng)
	})
	if kind == arch.ResidualMLP {
		m.layers[1] = newLinear(hiddenMult*s, s, true)
	}
	return m, nil
}

// newMapper assembles a mapper of valid sizes from layers made by newLayer.
func newMapper(kind arch.Mapper, s, hiddenMult int, newLayer func(in, out int, bias bool) *Linear) *Mapper {
	m := &Mapper{kind: kind, dim: s}
	switch kind {
	case arch.MLP, arch.ResidualMLP:
		m.hiddenMult = hiddenMult
		m.layers = []*Linear{newLayer(s, hiddenMult*s, true), newLayer(hiddenMult*s, s, true)}
		m.prefixes = []string{"fc1.", "fc2."}
	case arch.Linear, arch.LinearBias:
		m.layers = []*Linear{newLayer(s, s, kind == arch.LinearBias)}
		m.prefixes = []string{""}
	}
	return m
}

func checkMapperSizes(kind arch.Mapper, s, hiddenMult int) error {
	if err := kind.CheckTrained(); err != nil {
		return fmt.Errorf("mapper: unknown kind: %w", err)
	}
	switch {
	case s <= 0:
		return fmt.Errorf("mapper: feature dimension %d must be positive", s)
	case kind.Hidden() && hiddenMult <= 0:
		return fmt.Errorf("mapper: hidden multiple %d must be positive", hiddenMult)
	}
	return nil
}

// Kind returns arch.MLP, arch.Linear, arch.LinearBias or arch.ResidualMLP.
func (m *Mapper) Kind() arch.Mapper { return m.kind }

// Dim returns S, the feature dimension of input and output.
func (m *Mapper) Dim() int { return m.dim }

// HiddenMult returns the hidden width in multiples of S (0 for arch.Linear and arch.LinearBias).
func (m *Mapper) HiddenMult() int { return m.hiddenMult }

// Params returns the mapper's own trainable tensors (not copies), in the order of Built.Params: fc1.weight,
// fc1.bias, fc2.weight, fc2.bias for arch.MLP; weight for arch.Linear; weight, bias for arch.LinearBias.
func (m *Mapper) Params() []*tensor.Dense {
	var out []*tensor.Dense
	for _, l := range m.layers {
		out = append(out, l.Params()...)
	}
	return out
}

// NumParams returns the number of trainable scalars: 2*h*S*S + h*S + S for arch.MLP, S*S for arch.Linear,
// S*S + S for arch.LinearBias.
func (m *Mapper) NumParams() int {
	n := 0
	for _, l := range m.layers {
		n += l.NumParams()
	}
	return n
}

// Build adds the mapper to the graph of x, a float32 [N,S] node, and returns its output [N,S] with the parameter
// nodes.
func (m *Mapper) Build(g *G.ExprGraph, x *G.Node) (*Built, error) {
	if err := checkInput("mapper", x, -1, m.dim); err != nil {
		return nil, err
	}
	built := &Built{Output: x}
	for i, l := range m.layers {
		if i > 0 {
			h, err := ops.GELU(built.Output)
			if err != nil {
				return nil, fmt.Errorf("mapper: %w", err)
			}
			built.Output = h
		}
		lb, err := l.Build(g, built.Output)
		if err != nil {
			return nil, fmt.Errorf("mapper %s: %w", m.prefixes[i], err)
		}
		built.Output = lb.Output
		built.Params = append(built.Params, lb.Params...)
	}
	if m.kind == arch.ResidualMLP {
		out, err := G.Add(x, built.Output)
		if err != nil {
			return nil, fmt.Errorf("mapper skip: %w", err)
		}
		built.Output = out
	}
	return built, nil
}

// State returns copies of the mapper's tensors: fc1.weight [h*S,S], fc1.bias [h*S], fc2.weight [S,h*S],
// fc2.bias [S] for arch.MLP; weight [S,S] for arch.Linear; weight [S,S], bias [S] for arch.LinearBias.
func (m *Mapper) State() []safetensors.Tensor {
	var out []safetensors.Tensor
	for i, l := range m.layers {
		out = append(out, l.State(m.prefixes[i])...)
	}
	return out
}

// SetState copies the tensors State names from tensors into the mapper, in place, so graphs already built use
// the new values. Every tensor must be present with State's shape and finite values, and no other tensor may be
// present. On error, wrapping ErrBadState and naming every bad tensor, the mapper is unchanged.
func (m *Mapper) SetState(tensors []safetensors.Tensor) error {
	r := newStateReader("mapper "+string(m.kind), tensors, "")
	for i, l := range m.layers {
		r.readParams(m.prefixes[i], l.params())
	}
	return r.commit()
}

// Clone returns a deep copy of the mapper, with its own tensors.
func (m *Mapper) Clone() *Mapper {
	c := &Mapper{kind: m.kind, dim: m.dim, hiddenMult: m.hiddenMult, prefixes: m.prefixes}
	for _, l := range m.layers {
		c.layers = append(c.layers, l.Clone())
	}
	return c
}
