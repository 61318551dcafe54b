package ops

import (
	"fmt"
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// checkGrad compares the symbolic gradients of the scalar cost built by build with central finite differences
// (float64), reporting the worst relative error per input.
//
// The symbolic gradients are computed in the dtype of inputs (float32 or float64); the finite differences always
// run on a float64 copy of the graph, so float32 ops are checked against an accurate reference. The error of one
// element is
//
//	|symbolic - numeric| / max(|symbolic|, |numeric|, 1e-2*maxAbs(numeric of that input))
//
// so entries whose true gradient is near zero are judged on the scale of that input's gradient. inputs are not
// modified.
func checkGrad(t *testing.T, build func(g *G.ExprGraph, in []*G.Node) (*G.Node, error), inputs []*tensor.Dense, tol float64) {
	t.Helper()
	symbolic, err := symbolicGrads(build, inputs)
	if err != nil {
		t.Fatalf("symbolic gradients: %v", err)
	}
	numeric, err := numericGrads(build, inputs)
	if err != nil {
		t.Fatalf("numeric gradients: %v", err)
	}
	for i := range inputs {
		worst, at := 0.0, 0
		scale := 0.0
		for _, v := range numeric[i] {
			scale = math.Max(scale, math.Abs(v))
		}
		floor := math.Max(1e-2*scale, 1e-12)
		for j := range numeric[i] {
			a, b := symbolic[i][j], numeric[i][j]
			rel := math.Abs(a-b) / math.Max(math.Max(math.Abs(a), math.Abs(b)), floor)
			if rel > worst || math.IsNaN(rel) {
				worst, at = rel, j
			}
		}
		t.Logf("input %d %v: worst relative error %.3g at %d (symbolic %.6g numeric %.6g)",
			i, inputs[i].Shape(), worst, at, symbolic[i][at], numeric[i][at])
		if !(worst <= tol) {
			t.Errorf("input %d: worst relative error %.3g > tolerance %.3g", i, worst, tol)
		}
	}
}

// gradGraphInputs binds a copy of each tensor to a new input node of g, converted to dt.
func gradGraphInputs(g *G.ExprGraph, inputs []*tensor.Dense, dt tensor.Dtype) ([]*G.Node, []*tensor.Dense) {
	nodes := make([]*G.Node, len(inputs))
	values := make([]*tensor.Dense, len(inputs))
	for i, in := range inputs {
		src := toFloat64s(in)
		var v *tensor.Dense
		if dt == tensor.Float64 {
			v = tensor.New(tensor.WithShape(in.Shape().Clone()...), tensor.WithBacking(src))
		} else {
			f := make([]float32, len(src))
			for j, x := range src {
				f[j] = float32(x)
			}
			v = tensor.New(tensor.WithShape(in.Shape().Clone()...), tensor.WithBacking(f))
		}
		values[i] = v
		nodes[i] = G.NewTensor(g, dt, in.Dims(), G.WithShape(in.Shape().Clone()...), G.WithValue(v), G.WithName(fmt.Sprintf("in%d", i)))
	}
	return nodes, values
}

func symbolicGrads(build func(g *G.ExprGraph, in []*G.Node) (*G.Node, error), inputs []*tensor.Dense) ([][]float64, error) {
	g := G.NewGraph()
	nodes, _ := gradGraphInputs(g, inputs, inputs[0].Dtype())
	cost, err := build(g, nodes)
	if err != nil {
		return nil, err
	}
	if _, err := G.Grad(cost, nodes...); err != nil {
		return nil, err
	}
	// Read the gradients from the inputs' dual values, as solvers do: the value of a gradient node may sit in a
	// register that a later instruction reuses.
	vm := G.NewTapeMachine(g, G.BindDualValues(nodes...))
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, err
	}
	out := make([][]float64, len(nodes))
	for i, n := range nodes {
		gr, err := n.Grad()
		if err != nil {
			return nil, err
		}
		out[i] = toFloat64s(gr.(*tensor.Dense))
	}
	return out, nil
}

func numericGrads(build func(g *G.ExprGraph, in []*G.Node) (*G.Node, error), inputs []*tensor.Dense) ([][]float64, error) {
	const h = 1e-6
	g := G.NewGraph()
	nodes, values := gradGraphInputs(g, inputs, tensor.Float64)
	cost, err := build(g, nodes)
	if err != nil {
		return nil, err
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	eval := func() (float64, error) {
		defer vm.Reset()
		if err := vm.RunAll(); err != nil {
			return 0, err
		}
		return cost.Value().Data().(float64), nil
	}
	out := make([][]float64, len(inputs))
	for i, v := range values {
		data := v.Data().([]float64)
		out[i] = make([]float64, len(data))
		for j := range data {
			orig := data[j]
			data[j] = orig + h
			plus, err := eval()
			if err != nil {
				return nil, err
			}
			data[j] = orig - h
			minus, err := eval()
			if err != nil {
				return nil, err
			}
			data[j] = orig
			out[i][j] = (plus - minus) / (2 * h)
		}
	}
	return out, nil
}

// toFloat64s returns a float64 copy of a float32 or float64 tensor's data.
func toFloat64s(d *tensor.Dense) []float64 {
	switch data := d.Data().(type) {
	case []float64:
		return append([]float64(nil), data...)
	case []float32:
		out := make([]float64, len(data))
		for i, x := range data {
			out[i] = float64(x)
		}
		return out
	case float64:
		return []float64{data}
	case float32:
		return []float64{float64(data)}
	}
	panic(fmt.Sprintf("ops: unsupported tensor data %T", d.Data()))
}
