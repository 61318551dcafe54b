package models

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/bicyc/bicyc/safetensors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ErrBadState is wrapped by every error about a state (tensor list or file) that does not fit the model: a
// missing, unexpected, duplicated or mis-shaped tensor, a non-finite value, or metadata of another model.
var ErrBadState = errors.New("model state does not match the model")

// Built is what a model's Build adds to a graph.
type Built struct {
	// Output is the model's output node: [N,S] features for a Backbone and a Mapper, [N,out] for a Linear.
	Output *G.Node
	// Params are input nodes bound to the model's own trainable tensors (not copies), in the order of the
	// model's Params(). Pass them to G.Grad, to G.BindDualValues, and through G.NodesToValueGrads to a solver.
	Params G.Nodes
}

// instanceSerial numbers model instances. Node names start with the instance's number because gorgonia merges
// input nodes of equal name, type and shape: without it a frozen clone built into the training graph would
// silently share the trained model's nodes.
var instanceSerial atomic.Uint64

func newNodePrefix(kind string) string {
	return kind + strconv.FormatUint(instanceSerial.Add(1), 10) + "/"
}

// namedParam is one trainable tensor with its state name.
type namedParam struct {
	name  string
	value *tensor.Dense
}

// bindParams adds one float32 input node per parameter to g, bound to the parameter's own tensor, and returns
// them in order.
func bindParams(g *G.ExprGraph, nodePrefix string, params []namedParam) G.Nodes {
	nodes := make(G.Nodes, len(params))
	for i, p := range params {
		s := p.value.Shape()
		nodes[i] = G.NewTensor(g, tensor.Float32, s.Dims(), G.WithShape(s.Clone()...),
			G.WithName(nodePrefix+p.name), G.WithValue(p.value))
	}
	return nodes
}

// countParams returns the number of scalars in params.
// paramValues returns the tensors of ps, in order (the models' own, not copies).
func paramValues(ps []namedParam) []*tensor.Dense {
	out := make([]*tensor.Dense, len(ps))
	for i, p := range ps {
		out[i] = p.value
	}
	return out
}

func countParams(params []namedParam) int {
	n := 0
	for _, p := range params {
		n += p.value.DataSize()
	}
	return n
}

// checkInput returns an error unless x is a float32 node of rank len(shape) whose sizes match shape, where a
// negative entry matches any size.
func checkInput(model string, x *G.Node, shape ...int) error {
	if x == nil {
		return fmt.Errorf("%s: nil input node", model)
	}
	xs := x.Shape()
	ok := x.Dtype() == tensor.Float32 && xs.Dims() == len(shape)
	for i := 0; ok && i < len(shape); i++ {
		ok = shape[i] < 0 || xs[i] == shape[i]
	}
	if !ok {
		want := make([]string, len(shape))
		for i, d := range shape {
			want[i] = strconv.Itoa(d)
			if d < 0 {
				want[i] = "*"
			}
		}
		return fmt.Errorf("%s: input %q is %v %v, want float32 [%s]", model, x.Name(), xs, x.Dtype(), strings.Join(want, ","))
	}
	return nil
}

// stateTensor returns a safetensors tensor holding a copy of data.
func stateTensor(name string, shape []int, data []float32) safetensors.Tensor {
	return safetensors.Tensor{Name: name, Shape: slices.Clone(shape), Data: slices.Clone(data)}
}

// stateReader checks a tensor list against the tensors a model expects and defers every write until all of
// them passed, so a failed SetState leaves the model unchanged.
type stateReader struct {
	model  string
	byName map[string]safetensors.Tensor
	used   map[string]bool
	writes []stateWrite
	errs   []error
}

type stateWrite struct{ dst, src []float32 }

// newStateReader indexes the tensors whose names start with prefix (all of them for an empty prefix); the
// others are ignored.
func newStateReader(model string, tensors []safetensors.Tensor, prefix string) *stateReader {
	r := &stateReader{model: model, byName: make(map[string]safetensors.Tensor), used: make(map[string]bool)}
	for _, t := range tensors {
		if !strings.HasPrefix(t.Name, prefix) {
			continue
		}
		if _, dup := r.byName[t.Name]; dup {
			r.fail("tensor %q appears twice", t.Name)
			continue
		}
		r.byName[t.Name] = t
	}
	return r
}

func (r *stateReader) fail(format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf("%s state: %s: %w", r.model, fmt.Sprintf(format, args...), ErrBadState))
}

// read schedules copying tensor name, which must have the given shape and finite values, into dst. With
// nonNegative, negative values are refused too (running variances).
func (r *stateReader) read(name string, shape []int, dst []float32, nonNegative bool) {
	t, ok := r.byName[name]
	if !ok {
		r.fail("missing tensor %q", name)
		return
	}
	r.used[name] = true
	if !slices.Equal(t.Shape, shape) {
		r.fail("tensor %q has shape %v, want %v", name, t.Shape, shape)
		return
	}
	if len(t.Data) != len(dst) {
		r.fail("tensor %q has %d values, want %d", name, len(t.Data), len(dst))
		return
	}
	for i, v := range t.Data {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			r.fail("tensor %q holds %v at index %d", name, v, i)
			return
		}
		if nonNegative && v < 0 {
			r.fail("tensor %q holds negative variance %v at index %d", name, v, i)
			return
		}
	}
	r.writes = append(r.writes, stateWrite{dst: dst, src: t.Data})
}

// readParams schedules reading every parameter as prefix+name.
func (r *stateReader) readParams(prefix string, params []namedParam) {
	for _, p := range params {
		r.read(prefix+p.name, p.value.Shape(), p.value.Data().([]float32), false)
	}
}

// commit reports every problem found, including tensors nobody read, or else performs all scheduled writes.
func (r *stateReader) commit() error {
	var extra []string
	for name := range r.byName {
		if !r.used[name] {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	for _, name := range extra {
		r.fail("unexpected tensor %q", name)
	}
	if len(r.errs) > 0 {
		return errors.Join(r.errs...)
	}
	for _, w := range r.writes {
		copy(w.dst, w.src)
	}
	return nil
}

// WithPrefix returns tensors renamed to prefix+name, to store several models in one file. The data is shared
// with tensors, not copied.
func WithPrefix(prefix string, tensors []safetensors.Tensor) []safetensors.Tensor {
	out := make([]safetensors.Tensor, len(tensors))
	for i, t := range tensors {
		t.Name = prefix + t.Name
		out[i] = t
	}
	return out
}

// newTensor returns a float32 tensor of the given shape filled by fill (zeros when fill is nil).
func newTensor(fill func() float32, shape ...int) *tensor.Dense {
	t := tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(shape...))
	if fill != nil {
		data := t.Data().([]float32)
		for i := range data {
			data[i] = fill()
		}
	}
	return t
}

// normalFill draws from N(0, std^2).
func normalFill(rng *rand.Rand, std float64) func() float32 {
	return func() float32 { return float32(rng.NormFloat64() * std) }
}

// uniformFill draws from U(-bound, bound).
func uniformFill(rng *rand.Rand, bound float64) func() float32 {
	return func() float32 { return float32((2*rng.Float64() - 1) * bound) }
}

// constFill returns v.
func constFill(v float32) func() float32 { return func() float32 { return v } }

// cloneTensor returns a deep copy of t, or nil for nil.
func cloneTensor(t *tensor.Dense) *tensor.Dense {
	if t == nil {
		return nil
	}
	return t.Clone().(*tensor.Dense)
}
