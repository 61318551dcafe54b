package export

import (
	"fmt"
	"math"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/export/onnxgraph"
	"github.com/bicyc/bicyc/safetensors"
)

// Adapter returns adapter.onnx, the old-to-new feature map A:
// input bundle.TensorFeaturesOld [N,S] -> output bundle.TensorFeatures [N,S].
//
// Kind arch.MLP reads fc1.weight [H,S], fc1.bias [H], fc2.weight [S,H],
// fc2.bias [S] (H = 32S in package models) and computes, with the exact
// GELU built from Erf (the Gelu operator needs opset 20):
//
//	h = x fc1.weight^T + fc1.bias
//	g = h * 0.5 * (1 + erf(h / sqrt(2)))
//	y = g fc2.weight^T + fc2.bias
//
// Kind arch.ResidualMLP reads the same tensors and adds the input:
// y = x + (the arch.MLP output). Kind arch.Linear reads weight [S,S]
// and computes y = x weight^T; arch.LinearBias also reads bias [S] and
// computes y = x weight^T + bias.
// Errors wrap ErrState.
func Adapter(kind arch.Mapper, featureDim int, state []safetensors.Tensor) ([]byte, error) {
	if featureDim < 1 {
		return nil, fmt.Errorf("%w: adapter feature dim %d, want >= 1", ErrState, featureDim)
	}
	s, err := newStateDict("adapter", state)
	if err != nil {
		return nil, err
	}
	g := onnxgraph.New("bicyc_adapter")
	x := g.Input(bundle.TensorFeaturesOld, onnxgraph.Float, onnxgraph.BatchDim, featureDim)
	var y string
	switch kind {
	case arch.MLP:
		y, err = addMLP(g, x, s, featureDim, bundle.TensorFeatures)
	case arch.ResidualMLP:
		var m string
		if m, err = addMLP(g, x, s, featureDim, "mlp"); err == nil {
			y = g.Op("Add", bundle.TensorFeatures, []string{x, m})
		}
	case arch.Linear, arch.LinearBias:
		y, err = addLinear(g, x, s, featureDim, kind == arch.LinearBias)
	default:
		err = fmt.Errorf("%w: unknown adapter kind %w", ErrState, kind.CheckTrained())
	}
	if err != nil {
		return nil, err
	}
	g.Output(y, onnxgraph.Float, onnxgraph.BatchDim, featureDim)
	return onnxgraph.Marshal(g.Model(fmt.Sprintf("bicyc %s adapter: features_old [N,%d] -> features [N,%d]", kind, featureDim, featureDim)))
}

// addLinear adds y = x weight^T (+ bias) to g and returns its output, named
// bundle.TensorFeatures.
func addLinear(g *onnxgraph.Graph, x string, s stateDict, dim int, bias bool) (string, error) {
	w, err := s.get("weight", dim, dim)
	if err != nil {
		return "", err
	}
	in := []string{x, g.Floats("weight", []int{dim, dim}, w)}
	if bias {
		b, err := s.get("bias", dim)
		if err != nil {
			return "", err
		}
		in = append(in, g.Floats("bias", []int{dim}, b))
	}
	return g.Op("Gemm", bundle.TensorFeatures, in, onnxgraph.AttrInt("transB", 1)), nil
}

// addMLP adds Gemm-GELU-Gemm to g and returns the output, named out.
func addMLP(g *onnxgraph.Graph, x string, s stateDict, dim int, out string) (string, error) {
	shape, err := s.shape("fc1.weight")
	if err != nil {
		return "", err
	}
	if len(shape) != 2 || shape[0] < 1 {
		return "", fmt.Errorf("%w: adapter tensor %q has shape %v, want [hidden,%d]", ErrState, "fc1.weight", shape, dim)
	}
	hidden := shape[0]
	var p [4][]float32
	for i, spec := range []struct {
		name  string
		shape []int
	}{
		{"fc1.weight", []int{hidden, dim}},
		{"fc1.bias", []int{hidden}},
		{"fc2.weight", []int{dim, hidden}},
		{"fc2.bias", []int{dim}},
	} {
		if p[i], err = s.get(spec.name, spec.shape...); err != nil {
			return "", err
		}
		g.Floats(spec.name, spec.shape, p[i])
	}
	h := g.Op("Gemm", "fc1", []string{x, "fc1.weight", "fc1.bias"}, onnxgraph.AttrInt("transB", 1))
	sqrt2 := g.Floats("gelu.sqrt2", nil, []float32{math.Sqrt2})
	one := g.Floats("gelu.one", nil, []float32{1})
	half := g.Floats("gelu.half", nil, []float32{0.5})
	e := g.Op("Erf", "gelu.erf", []string{g.Op("Div", "gelu.scaled", []string{h, sqrt2})})
	gate := g.Op("Mul", "gelu.gate", []string{g.Op("Add", "gelu.one_plus_erf", []string{e, one}), half})
	act := g.Op("Mul", "gelu", []string{h, gate})
	return g.Op("Gemm", out, []string{act, "fc2.weight", "fc2.bias"}, onnxgraph.AttrInt("transB", 1)), nil
}
