package export

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/bicyc/bicyc/export/onnxgraph"
	"github.com/bicyc/bicyc/safetensors"
)

// ErrState is wrapped by every error about a state dict or prototype table:
// a missing, duplicated, misshapen or non-finite tensor.
var ErrState = errors.New("invalid model state")

// stateDict indexes a module's tensors by name. Tensors it never asks for
// (task heads, optimiser state) are ignored.
type stateDict struct {
	module string
	byName map[string]safetensors.Tensor
}

func newStateDict(module string, tensors []safetensors.Tensor) (stateDict, error) {
	s := stateDict{module: module, byName: make(map[string]safetensors.Tensor, len(tensors))}
	for _, t := range tensors {
		if _, dup := s.byName[t.Name]; dup {
			return stateDict{}, fmt.Errorf("%w: %s tensor %q appears twice", ErrState, module, t.Name)
		}
		s.byName[t.Name] = t
	}
	return s, nil
}

// get returns the data of tensor name after checking that its shape is
// exactly shape and that every value is finite.
func (s stateDict) get(name string, shape ...int) ([]float32, error) {
	t, ok := s.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s tensor %q is missing", ErrState, s.module, name)
	}
	if !slices.Equal(t.Shape, shape) {
		return nil, fmt.Errorf("%w: %s tensor %q has shape %v, want %v", ErrState, s.module, name, t.Shape, shape)
	}
	if err := checkValues(fmt.Sprintf("%s tensor %q", s.module, name), t.Data, onnxgraph.NumElements(shape)); err != nil {
		return nil, err
	}
	return t.Data, nil
}

// shape returns the shape of tensor name, for dimensions the contract leaves
// open (the adapter's hidden width).
func (s stateDict) shape(name string) ([]int, error) {
	t, ok := s.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s tensor %q is missing", ErrState, s.module, name)
	}
	return t.Shape, nil
}

// checkValues reports a length other than n or a NaN or infinite value,
// naming what (the tensor) and the first bad index.
func checkValues(what string, data []float32, n int) error {
	if len(data) != n {
		return fmt.Errorf("%w: %s has %d values, want %d", ErrState, what, len(data), n)
	}
	for i, v := range data {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("%w: %s has non-finite value %v at index %d", ErrState, what, v, i)
		}
	}
	return nil
}
