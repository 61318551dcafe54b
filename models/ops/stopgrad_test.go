package ops

import (
	"fmt"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestStopGradient checks that cost = sum(x ⊙ sg(x)) gives dcost/dx = sg(x) = x, not the 2x of sum(x ⊙ x).
func TestStopGradient(t *testing.T) {
	xs := []float64{-2, 0.5, 3}
	for i, stop := range []bool{true, false} {
		g := G.NewGraph()
		x := G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("x"),
			G.WithValue(tensor.New(tensor.WithBacking(append([]float64(nil), xs...)))))
		other := x
		if stop {
			var err error
			if other, err = StopGradient(x); err != nil {
				t.Fatal(err)
			}
		}
		cost := G.Must(G.Sum(G.Must(G.HadamardProd(x, other))))
		grads, err := G.Grad(cost, x)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		vm := G.NewTapeMachine(g)
		if err := vm.RunAll(); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		vm.Close()
		got := grads[0].Value().Data().([]float64)
		for j, v := range xs {
			want := v
			if !stop {
				want = 2 * v
			}
			if got[j] != want {
				t.Errorf("case %d (stop %v): dcost/dx[%d] = %v, want %v", i, stop, j, got[j], want)
			}
		}
		if stop {
			if fwd := other.Value().Data().([]float64); fmt.Sprint(fwd) != fmt.Sprint(xs) {
				t.Errorf("case %d: forward %v, want %v", i, fwd, xs)
			}
		}
	}
}

// TestStopGradientOnlyPath checks that a cost reaching x only through StopGradient gives x no gradient, while a
// second input on another path still gets its own.
func TestStopGradientOnlyPath(t *testing.T) {
	g := G.NewGraph()
	x := G.NewVector(g, tensor.Float64, G.WithShape(2), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithBacking([]float64{1, 2}))))
	w := G.NewVector(g, tensor.Float64, G.WithShape(2), G.WithName("w"),
		G.WithValue(tensor.New(tensor.WithBacking([]float64{3, 5}))))
	sx, err := StopGradient(x)
	if err != nil {
		t.Fatal(err)
	}
	cost := G.Must(G.Sum(G.Must(G.HadamardProd(sx, w))))
	if _, err := G.Grad(cost, x); err == nil {
		t.Error("G.Grad with respect to x, reachable only through StopGradient: got nil error")
	}
	grads, err := G.Grad(cost, w)
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	if got := grads[0].Value().Data().([]float64); got[0] != 1 || got[1] != 2 {
		t.Errorf("dcost/dw = %v, want [1 2] (= x)", got)
	}
}

func ExampleStopGradient() {
	g := G.NewGraph()
	x := G.NewVector(g, tensor.Float64, G.WithShape(3), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 2, 3}))))
	sg, err := StopGradient(x)
	if err != nil {
		fmt.Println(err)
		return
	}
	// cost = sum(x ⊙ sg(x)): the stopped factor counts as a constant, so dcost/dx = sg(x) = x, not 2x.
	cost, err := G.Sum(G.Must(G.HadamardProd(x, sg)))
	if err != nil {
		fmt.Println(err)
		return
	}
	grads, err := G.Grad(cost, x)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := runGraph(g); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cost.Value(), grads[0].Value().Data())
	// Output: 14 [1 2 3]
}
