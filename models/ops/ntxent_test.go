package ops

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ntXentValue runs NTXent on z (converted to dt) and returns the loss.
func ntXentValue(t *testing.T, z *tensor.Dense, dt tensor.Dtype, temperature float64) float64 {
	t.Helper()
	g := G.NewGraph()
	nodes, _ := gradGraphInputs(g, []*tensor.Dense{z}, dt)
	loss, err := NTXent(nodes[0], temperature)
	if err != nil {
		t.Fatal(err)
	}
	var v G.Value
	G.Read(loss, &v)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	switch x := v.Data().(type) {
	case float32:
		return float64(x)
	case float64:
		return x
	}
	t.Fatalf("loss value %T", v.Data())
	return 0
}

// ntXentReference is the loss written out plainly, without the log-sum-exp shift: for each row the
// probability of its pair among all other rows under exp(cosine/temperature).
func ntXentReference(z []float64, r, p int, temperature float64) float64 {
	cos := func(a, b int) float64 {
		var ab, aa, bb float64
		for j := range p {
			ab += z[a*p+j] * z[b*p+j]
			aa += z[a*p+j] * z[a*p+j]
			bb += z[b*p+j] * z[b*p+j]
		}
		return ab / math.Sqrt(aa*bb)
	}
	var loss float64
	for i := range r {
		pair := i + 1
		if i%2 == 1 {
			pair = i - 1
		}
		var den float64
		for k := range r {
			if k != i {
				den += math.Exp(cos(i, k) / temperature)
			}
		}
		loss -= math.Log(math.Exp(cos(i, pair)/temperature) / den)
	}
	return loss / float64(r)
}

func TestNTXentHandValue(t *testing.T) {
	// Two pairs on opposite directions, lengths differing within a pair: with temperature 1 every row sees
	// its pair at cosine 1 and the other two rows at -1, so the loss is log(e + 2/e) - 1.
	z := tensor.New(tensor.WithShape(4, 2), tensor.WithBacking([]float64{1, 0, 3, 0, -2, 0, -0.5, 0}))
	want := math.Log(math.E+2/math.E) - 1
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		if got := ntXentValue(t, z, dt, 1); math.Abs(got-want) > 1e-6 {
			t.Errorf("%v: loss %.9f, want log(e+2/e)-1 = %.9f", dt, got, want)
		}
	}
}

func TestNTXentMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, c := range []struct {
		r, p        int
		temperature float64
	}{{4, 3, 1}, {16, 8, 0.5}, {32, 64, 0.1}} {
		z := randDense(rng, c.r, c.p)
		want := ntXentReference(z.Float64s(), c.r, c.p, c.temperature)
		if got := ntXentValue(t, z, tensor.Float64, c.temperature); math.Abs(got-want) > 1e-9*math.Max(1, want) {
			t.Errorf("R=%d P=%d t=%v: float64 loss %.12f, reference %.12f", c.r, c.p, c.temperature, got, want)
		}
		if got := ntXentValue(t, z, tensor.Float32, c.temperature); math.Abs(got-want) > 1e-5*math.Max(1, want) {
			t.Errorf("R=%d P=%d t=%v: float32 loss %.9f, reference %.9f", c.r, c.p, c.temperature, got, want)
		}
	}
}

func TestNTXentGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	for _, c := range []struct {
		r, p        int
		temperature float64
	}{{4, 3, 1}, {8, 5, 0.5}, {12, 6, 0.2}} {
		z := randDense(rng, c.r, c.p)
		build := func(g *G.ExprGraph, in []*G.Node) (*G.Node, error) { return NTXent(in[0], c.temperature) }
		checkGrad(t, build, []*tensor.Dense{z}, 1e-6)
		checkGrad(t, build, []*tensor.Dense{toFloat32Dense(z)}, 1e-4)
	}
}

// TestNTXentGradientThroughGraph checks the gradient where the projections are computed from parameters, as
// in Stage I (a linear map of the features), so the op's output gradient is a graph node, not the cost's seed.
func TestNTXentGradientThroughGraph(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 15))
	x, w := randDense(rng, 8, 4), randDense(rng, 4, 3)
	build := func(g *G.ExprGraph, in []*G.Node) (*G.Node, error) {
		p, err := G.Mul(in[0], in[1])
		if err != nil {
			return nil, err
		}
		l, err := NTXent(p, 0.5)
		if err != nil {
			return nil, err
		}
		return G.Mul(l, G.NewConstant(2.5))
	}
	checkGrad(t, build, []*tensor.Dense{x, w}, 1e-6)
}

func TestNTXentRejects(t *testing.T) {
	g := G.NewGraph()
	odd := G.NewMatrix(g, tensor.Float64, G.WithShape(5, 3), G.WithName("odd"))
	if _, err := NTXent(odd, 0.5); !errors.Is(err, ErrShape) {
		t.Errorf("5 rows: error %v, want ErrShape", err)
	}
	ok := G.NewMatrix(g, tensor.Float64, G.WithShape(4, 3), G.WithName("ok"))
	for _, temp := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if _, err := NTXent(ok, temp); err == nil {
			t.Errorf("temperature %v accepted", temp)
		}
	}
	z := tensor.New(tensor.WithShape(4, 2), tensor.WithBacking([]float64{1, 0, math.NaN(), 0, 1, 1, 0, 1}))
	if _, err := ntXentForward(z, 1); !errors.Is(err, ErrNonFinite) {
		t.Errorf("NaN projection: error %v, want ErrNonFinite", err)
	}
}
