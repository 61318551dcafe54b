package ops

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// runAntiCollapse evaluates the loss of z in z's dtype.
func runAntiCollapse(z *tensor.Dense, opts AntiCollapseOptions) (float64, error) {
	g := G.NewGraph()
	nodes, _ := gradGraphInputs(g, []*tensor.Dense{z}, z.Dtype())
	loss, err := AntiCollapse(nodes[0], opts)
	if err != nil {
		return 0, err
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return 0, err
	}
	return scalarFloat("test", loss.Value())
}

func TestAntiCollapseValue(t *testing.T) {
	// Rows ±a e1 and ±b e2 (B = 4 > S = 2): zero mean, Sigma = diag(2a^2/3, 2b^2/3), so L_ii = sqrt(Sigma_ii + eps).
	a, b := 0.6, 3.0
	z := tensor.New(tensor.WithShape(4, 2), tensor.WithBacking([]float64{a, 0, -a, 0, 0, b, 0, -b}))
	// Two columns of one sample each, B = 2 <= S = 3: the diagonal approximation, Sigma_ii = (x_i - y_i)^2 / 2.
	zDiag := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{0, 1, 5, 0, 0, 5}))
	s1, s2 := 2*a*a/3, 2*b*b/3
	cases := []struct {
		z    *tensor.Dense
		opts AntiCollapseOptions
		want float64
	}{
		{z, DefaultAntiCollapseOptions(), -(math.Sqrt(s1+1e-6) + 1) / 2},
		{z, AntiCollapseOptions{Beta: 10, Jitter: 0}, -(math.Sqrt(s1) + math.Sqrt(s2)) / 2},
		// kappa = 0.5 adds 0.5 * (s1+s2)/2 to each diagonal entry.
		{z, AntiCollapseOptions{Beta: 10, Shrink: 0.5}, -(math.Sqrt(s1+(s1+s2)/4) + math.Sqrt(s2+(s1+s2)/4)) / 2},
		// Columns 0 and 2 are constant: with eps = 0 their variance 0 is floored at 1e-6.
		{zDiag, AntiCollapseOptions{Beta: 1}, -(2*math.Sqrt(1e-6) + math.Sqrt(0.5)) / 3},
		{zDiag, DefaultAntiCollapseOptions(), -(2*math.Sqrt(1e-6) + math.Sqrt(0.5+1e-6)) / 3},
	}
	for i, c := range cases {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			in := c.z
			if dt == tensor.Float32 {
				in = toFloat32Dense(c.z)
			}
			got, err := runAntiCollapse(in, c.opts)
			if err != nil {
				t.Fatalf("case %d %v: %v", i, dt, err)
			}
			tol := 1e-12
			if dt == tensor.Float32 {
				tol = 1e-6
			}
			if math.Abs(got-c.want) > tol {
				t.Errorf("case %d %v: loss %.12g, want %.12g", i, dt, got, c.want)
			}
		}
	}
}

func toFloat32Dense(d *tensor.Dense) *tensor.Dense {
	f := make([]float32, d.DataSize())
	for i, v := range toFloat64s(d) {
		f[i] = float32(v)
	}
	return tensor.New(tensor.WithShape(d.Shape().Clone()...), tensor.WithBacking(f))
}

// antiCollapseFeatures returns [b,s] features whose column j has standard deviation about scales[j].
func antiCollapseFeatures(rng *rand.Rand, b int, scales []float64) *tensor.Dense {
	z := randDense(rng, b, len(scales))
	data := z.Float64s()
	for i := range b {
		for j, sc := range scales {
			data[i*len(scales)+j] *= sc * math.Sqrt(3)
		}
	}
	return z
}

func TestAntiCollapseGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	// Scales above beta = 1 put some L_ii past the cap, so the clamped (zero) gradient is checked too.
	scales := []float64{0.3, 0.7, 2.5, 0.5, 4}
	cases := []struct {
		name string
		z    *tensor.Dense
		opts AntiCollapseOptions
	}{
		{"full B>S", antiCollapseFeatures(rng, 12, scales), DefaultAntiCollapseOptions()},
		{"full B>S shrink", antiCollapseFeatures(rng, 9, scales), AntiCollapseOptions{Beta: 2.5, Shrink: 0.3, Jitter: 1e-4}},
		{"full B=S+1", antiCollapseFeatures(rng, 6, scales), AntiCollapseOptions{Beta: 2, Jitter: 1e-3}},
		{"diagonal B<S", antiCollapseFeatures(rng, 3, scales), DefaultAntiCollapseOptions()},
		{"diagonal B=S shrink", antiCollapseFeatures(rng, 5, scales), AntiCollapseOptions{Beta: 1.5, Shrink: 0.2, Jitter: 1e-6}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Logf("case %d", i)
			build := func(g *G.ExprGraph, in []*G.Node) (*G.Node, error) { return AntiCollapse(in[0], c.opts) }
			checkGrad(t, build, []*tensor.Dense{c.z}, 1e-6)
			checkGrad(t, build, []*tensor.Dense{toFloat32Dense(c.z)}, 1e-4)
		})
	}
}

// TestAntiCollapseClamped checks that features spread far beyond beta in every direction get no gradient.
func TestAntiCollapseClamped(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	for i, b := range []int{10, 3} {
		z := antiCollapseFeatures(rng, b, []float64{5, 6, 7, 8})
		g := G.NewGraph()
		nodes, _ := gradGraphInputs(g, []*tensor.Dense{z}, tensor.Float64)
		loss, err := AntiCollapse(nodes[0], DefaultAntiCollapseOptions())
		if err != nil {
			t.Fatal(err)
		}
		grads, err := G.Grad(loss, nodes[0])
		if err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(g)
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		vm.Close()
		if got := loss.Value().Data().(float64); got != -1 {
			t.Errorf("case %d: loss %v, want -1 (every L_ii capped at beta)", i, got)
		}
		for j, v := range grads[0].Value().Data().([]float64) {
			if v != 0 {
				t.Errorf("case %d: gradient[%d] = %v, want 0", i, j, v)
				break
			}
		}
	}
}

// TestAntiCollapseCollapsedFeatures checks that identical rows (a collapsed batch, Sigma = 0) still give a finite
// loss and gradient through the jitter.
func TestAntiCollapseCollapsedFeatures(t *testing.T) {
	z := tensor.New(tensor.WithShape(6, 3), tensor.WithBacking([]float64{
		1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}))
	got, err := runAntiCollapse(z, AntiCollapseOptions{Beta: 1, Jitter: 0})
	if err != nil {
		t.Fatal(err)
	}
	if want := -math.Sqrt(minRepairJitter); math.Abs(got-want) > 1e-9 {
		t.Errorf("loss %v, want %v (jitter 1e-6 on a zero covariance)", got, want)
	}
}

func TestAntiCollapseErrors(t *testing.T) {
	g := G.NewGraph()
	cases := []struct {
		shape tensor.Shape
		opts  AntiCollapseOptions
	}{
		{tensor.Shape{1, 4}, DefaultAntiCollapseOptions()},
		{tensor.Shape{8}, DefaultAntiCollapseOptions()},
		{tensor.Shape{8, 4}, AntiCollapseOptions{}},
		{tensor.Shape{8, 4}, AntiCollapseOptions{Beta: 1, Shrink: -1}},
		{tensor.Shape{8, 4}, AntiCollapseOptions{Beta: 1, Jitter: math.NaN()}},
	}
	for i, c := range cases {
		z := G.NewTensor(g, tensor.Float64, c.shape.Dims(), G.WithShape(c.shape...), G.WithName(fmt.Sprintf("z%d", i)))
		if _, err := AntiCollapse(z, c.opts); err == nil {
			t.Errorf("case %d: shape %v options %+v: got nil error", i, c.shape, c.opts)
		}
	}
	nan := tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{1, 2, 3, math.NaN(), 5, 6}))
	if _, err := runAntiCollapse(nan, DefaultAntiCollapseOptions()); !errors.Is(machineCause(err), ErrNonFinite) {
		t.Errorf("NaN feature: error %v, want ErrNonFinite", err)
	}
}

func ExampleAntiCollapse() {
	g := G.NewGraph()
	// Four 2-D features with standard deviation 0.49 along the first axis and 2.45 along the second: only the
	// first is below beta = 1, so only it is pushed outwards (negative gradient for positive z).
	z := G.NewMatrix(g, tensor.Float32, G.WithShape(4, 2), G.WithName("z"),
		G.WithValue(tensor.New(tensor.WithShape(4, 2), tensor.WithBacking([]float32{0.6, 0, -0.6, 0, 0, 3, 0, -3}))))
	loss, err := AntiCollapse(z, DefaultAntiCollapseOptions())
	if err != nil {
		fmt.Println(err)
		return
	}
	grads, err := G.Grad(loss, z)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := runGraph(g); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("loss %.4f\ngradient %.4f\n", loss.Value(), grads[0].Value().Data())
	// Output:
	// loss -0.7449
	// gradient [-0.2041 0.0000 0.2041 0.0000 0.0000 0.0000 0.0000 0.0000]
}

// BenchmarkAntiCollapse times the loss and its gradient at the paper's batch 256 and S = 64.
func BenchmarkAntiCollapse(b *testing.B) {
	rng := rand.New(rand.NewPCG(12, 13))
	z := toFloat32Dense(antiCollapseFeatures(rng, 256, slices.Repeat([]float64{0.5}, 64)))
	g := G.NewGraph()
	nodes, _ := gradGraphInputs(g, []*tensor.Dense{z}, tensor.Float32)
	loss, err := AntiCollapse(nodes[0], DefaultAntiCollapseOptions())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := G.Grad(loss, nodes[0]); err != nil {
		b.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	for b.Loop() {
		if err := vm.RunAll(); err != nil {
			b.Fatal(err)
		}
		vm.Reset()
	}
}
