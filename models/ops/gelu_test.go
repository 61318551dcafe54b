package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// geluReference holds x*Phi(x) from Python's math.erf (double precision).
var geluReference = []struct{ x, y float64 }{
	{-3, -0.00404969409489031},
	{-1, -0.15865525393145707},
	{-0.5, -0.15426876936299344},
	{0, 0},
	{0.5, 0.34573123063700656},
	{1, 0.8413447460685429},
	{3, 2.99595030590511},
}

// runGELU evaluates GELU on xs in dtype dt and returns the outputs as float64.
func runGELU(t *testing.T, xs []float64, dt tensor.Dtype) []float64 {
	t.Helper()
	g := G.NewGraph()
	nodes, _ := gradGraphInputs(g, []*tensor.Dense{tensor.New(tensor.WithShape(len(xs)), tensor.WithBacking(xs))}, dt)
	y, err := GELU(nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	return toFloat64s(y.Value().(*tensor.Dense))
}

func TestGELUValues(t *testing.T) {
	xs := make([]float64, len(geluReference))
	for i, c := range geluReference {
		xs[i] = c.x
	}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		tol := 1e-15
		if dt == tensor.Float32 {
			tol = 1e-7
		}
		got := runGELU(t, xs, dt)
		for i, c := range geluReference {
			if math.Abs(got[i]-c.y) > tol*math.Max(1, math.Abs(c.y)) {
				t.Errorf("case %d %v: gelu(%v) = %.17g, want %.17g", i, dt, c.x, got[i], c.y)
			}
		}
	}
}

func TestGELUGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := randDense(rng, 3, 7)
	// Spread the inputs over [-4, 4] so both tails and the bend around 0 are checked.
	for i := range x.Float64s() {
		x.Float64s()[i] *= 4
	}
	build := func(g *G.ExprGraph, in []*G.Node) (*G.Node, error) {
		y, err := GELU(in[0])
		if err != nil {
			return nil, err
		}
		return weightedSum(y)
	}
	checkGrad(t, build, []*tensor.Dense{x}, 1e-6)
	x32 := tensor.New(tensor.WithShape(3, 7), tensor.WithBacking(make([]float32, 21)))
	for i, v := range x.Float64s() {
		x32.Float32s()[i] = float32(v)
	}
	checkGrad(t, build, []*tensor.Dense{x32}, 1e-5)
}

func TestGELURejectsIntegers(t *testing.T) {
	g := G.NewGraph()
	x := G.NewVector(g, tensor.Int, G.WithShape(3), G.WithName("x"))
	if _, err := GELU(x); err == nil {
		t.Fatal("GELU of an int vector: got nil error")
	}
}

func ExampleGELU() {
	g := G.NewGraph()
	x := G.NewVector(g, tensor.Float32, G.WithShape(3), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithBacking([]float32{-1, 0, 1}))))
	y, err := GELU(x)
	if err != nil {
		fmt.Println(err)
		return
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.4f\n", y.Value().Data())
	// Output: [-0.1587 0.0000 0.8413]
}
