package ops

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// randomSPD returns a float64 [n,n] tensor A = M M^T / n + I for a random M, well conditioned.
func randomSPD(rng *rand.Rand, n int) *tensor.Dense {
	m := randDense(rng, n, n).Float64s()
	a := make([]float64, n*n)
	for i := range n {
		for j := range n {
			var s float64
			for k := range n {
				s += m[i*n+k] * m[j*n+k]
			}
			a[i*n+j] = s / float64(n)
		}
		a[i*n+i]++
	}
	return tensor.New(tensor.WithShape(n, n), tensor.WithBacking(a))
}

// runCholesky factors a in a graph and returns L, or the machine's error.
func runCholesky(a *tensor.Dense) (*tensor.Dense, error) {
	g := G.NewGraph()
	nodes, _ := gradGraphInputs(g, []*tensor.Dense{a}, a.Dtype())
	l, err := Cholesky(nodes[0])
	if err != nil {
		return nil, err
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, err
	}
	return l.Value().(*tensor.Dense), nil
}

func TestCholeskyForward(t *testing.T) {
	// [[4 2] [2 3]] = [[2 0] [1 sqrt2]] [[2 1] [0 sqrt2]].
	for i, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		a := tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{4, 2, 2, 3}))
		g := G.NewGraph()
		nodes, _ := gradGraphInputs(g, []*tensor.Dense{a}, dt)
		l, err := Cholesky(nodes[0])
		if err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(g)
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		vm.Close()
		got := toFloat64s(l.Value().(*tensor.Dense))
		want := []float64{2, 0, 1, math.Sqrt2}
		for j := range want {
			if math.Abs(got[j]-want[j]) > 1e-7 {
				t.Errorf("case %d %v: L = %v, want %v", i, dt, got, want)
				break
			}
		}
	}
}

func TestCholeskyGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	build := func(g *G.ExprGraph, in []*G.Node) (*G.Node, error) {
		l, err := Cholesky(in[0])
		if err != nil {
			return nil, err
		}
		return weightedSum(l)
	}
	for i, n := range []int{1, 3, 6} {
		t.Logf("case %d: n = %d", i, n)
		checkGrad(t, build, []*tensor.Dense{randomSPD(rng, n)}, 1e-6)
	}
}

func TestCholeskyNotPositiveDefinite(t *testing.T) {
	cases := []struct {
		a    []float64
		want error
	}{
		{[]float64{1, 2, 2, 1}, ErrNotPositiveDefinite},
		{[]float64{1, 0, 0, math.NaN()}, ErrNonFinite},
	}
	for i, c := range cases {
		_, err := runCholesky(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking(c.a)))
		if !errors.Is(machineCause(err), c.want) {
			t.Errorf("case %d: error %v, want %v", i, err, c.want)
		}
	}
}

func TestCholeskyRejectsNonSquare(t *testing.T) {
	g := G.NewGraph()
	a := G.NewMatrix(g, tensor.Float64, G.WithShape(2, 3), G.WithName("a"))
	if _, err := Cholesky(a); !errors.Is(err, ErrShape) {
		t.Fatalf("Cholesky of a 2x3 matrix: error %v, want ErrShape", err)
	}
}

func TestRobustCholesky(t *testing.T) {
	cases := []struct {
		name   string
		a      []float64 // 3x3, symmetric
		jitter float64
		repair choleskyRepair
		err    error
	}{
		{"positive definite", []float64{4, 2, 0, 2, 3, 0, 0, 0, 1}, 1e-6, repairNone, nil},
		// Rank 1 (all ones): singular, factored after adding jitter.
		{"singular", []float64{1, 1, 1, 1, 1, 1, 1, 1, 1}, 0, repairJitter, nil},
		// Eigenvalues 3, 1 and -1: no jitter up to 0.1 helps, the eigenvalue floor does.
		{"indefinite", []float64{1, 0, 0, 0, 1, 2, 0, 2, 1}, 1e-6, repairEigenFloor, nil},
		{"nan", []float64{1, 0, 0, 0, math.NaN(), 0, 0, 0, 1}, 1e-6, repairNone, ErrNonFinite},
		{"inf", []float64{1, 0, 0, 0, math.Inf(1), 0, 0, 0, 1}, 1e-6, repairNone, ErrNonFinite},
	}
	for i, c := range cases {
		a := mat.NewSymDense(3, c.a)
		l, repair, err := robustCholesky(a, c.jitter)
		if !errors.Is(err, c.err) || (c.err == nil && err != nil) {
			t.Errorf("case %d (%s): error %v, want %v", i, c.name, err, c.err)
			continue
		}
		if err != nil {
			continue
		}
		if repair != c.repair {
			t.Errorf("case %d (%s): repair %d, want %d", i, c.name, repair, c.repair)
		}
		var llt mat.Dense
		llt.Mul(l, l.T())
		// The factor reproduces a up to the repair: exactly when none was needed, within the jitter otherwise,
		// and with the negative eigenvalue (-1) raised to the floor after an eigenvalue floor.
		tol := map[choleskyRepair]float64{repairNone: 1e-12, repairJitter: 1e-4, repairEigenFloor: 1.01}[repair]
		if d := maxAbsDiff(&llt, a); d > tol {
			t.Errorf("case %d (%s): |L L^T - a| = %g > %g", i, c.name, d, tol)
		}
		for j := range 3 {
			if !(l.At(j, j) > 0) {
				t.Errorf("case %d (%s): L[%d,%d] = %v, want > 0", i, c.name, j, j, l.At(j, j))
			}
		}
	}
}

// machineCause returns the op's own error from a gorgonia TapeMachine error, whose wrapper type has Err() but no
// Unwrap, so errors.Is cannot see through it; other errors are returned unchanged.
func machineCause(err error) error {
	var vmErr interface{ Err() error }
	if errors.As(err, &vmErr) {
		return vmErr.Err()
	}
	return err
}

func maxAbsDiff(a, b mat.Matrix) float64 {
	r, c := a.Dims()
	var d float64
	for i := range r {
		for j := range c {
			d = math.Max(d, math.Abs(a.At(i, j)-b.At(i, j)))
		}
	}
	return d
}

func ExampleRobustCholesky() {
	// A rank-1 covariance: plain Cholesky fails, a small jitter makes it factor.
	a := mat.NewSymDense(2, []float64{1, 1, 1, 1})
	l, err := RobustCholesky(a, 1e-6)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.4f %.4f\n%.4f %.4f\n", l.At(0, 0), l.At(0, 1), l.At(1, 0), l.At(1, 1))
	// Output:
	// 1.0000 0.0000
	// 1.0000 0.0014
}
