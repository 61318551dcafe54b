package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/models/ops/internal/vector"
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
	if err := runGraph(g); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.4f\n", y.Value().Data())
	// Output: [-0.1587 0.0000 0.8413]
}

// approxErf is erf built from the float32 path's pieces: erf(x) = sign(x) (1 - exp(-x^2) erfcScaled(|x|)).
func approxErf(x float64) float64 {
	u := math.Abs(x)
	if !(u < geluTail/math.Sqrt2) {
		return math.Copysign(1, x) * u / u // ±1, NaN for NaN
	}
	return math.Copysign(1-expNonPositive(-u*u)*erfcScaled(u), x)
}

// TestErfApproximation checks the erf of the float32 path against math.Erf on a dense grid covering every
// value where erf is not ±1 in float64, and at the extremes. The issue asked for 1e-6; the fit gives 2e-8.
func TestErfApproximation(t *testing.T) {
	const step = 1.0 / 65536
	worst, at := 0.0, 0.0
	for x := -7.0; x <= 7; x += step {
		if d := math.Abs(approxErf(x) - math.Erf(x)); d > worst {
			worst, at = d, x
		}
	}
	t.Logf("largest |erf error| on [-7, 7] step 2^-16: %.3g at %v", worst, at)
	if worst > 2e-8 {
		t.Errorf("largest |erf error| %.3g at %v, want <= 2e-8", worst, at)
	}
	for i, x := range []float64{0, math.Copysign(0, -1), 1e-300, -1e-30, 5e-8, 6, -6.5, 10, -15, 21.2, -21.3, 26, 1e30, -math.MaxFloat64,
		math.Inf(1), math.Inf(-1)} {
		if got, want := approxErf(x), math.Erf(x); math.Abs(got-want) > 2e-8 {
			t.Errorf("case %d: erf(%v) = %v, want %v", i, x, got, want)
		}
	}
	if got := approxErf(math.NaN()); !math.IsNaN(got) {
		t.Errorf("erf(NaN) = %v, want NaN", got)
	}
}

// TestExpNonPositive checks expNonPositive against math.Exp over its whole domain [-500, 0].
func TestExpNonPositive(t *testing.T) {
	worst, at := 0.0, 0.0
	for a := -500.0; a <= 0; a += 1.0 / 4096 {
		want := math.Exp(a)
		if r := math.Abs(expNonPositive(a)-want) / want; r > worst {
			worst, at = r, a
		}
	}
	t.Logf("largest relative error %.3g at %v", worst, at)
	if worst > 3e-10 {
		t.Errorf("largest relative error %.3g at %v, want <= 3e-10", worst, at)
	}
}

// TestGELUFloat32MatchesFloat64 compares the float32 path, value and derivative, with the float64 one (math.Erf)
// on a dense grid, every float32 exponent and the special values. Besides rounding to float32 (half an ulp),
// the float32 path may differ by the approximation's 2e-8 * |x| (value) and 2e-8 * (1 + x^2) (derivative).
func TestGELUFloat32MatchesFloat64(t *testing.T) {
	var xs []float32
	for x := float32(-40); x <= 40; x += 1.0 / 1024 {
		xs = append(xs, x)
	}
	for e := -149; e <= 127; e++ {
		v := float32(math.Ldexp(1.37, e))
		xs = append(xs, v, -v)
	}
	xs = append(xs, 0, float32(math.Copysign(0, -1)), math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()))
	y, d := make([]float32, len(xs)), make([]float32, len(xs))
	gelu32(y, d, xs)
	x64 := make([]float64, len(xs))
	for i, v := range xs {
		x64[i] = float64(v)
	}
	y64, d64 := make([]float64, len(xs)), make([]float64, len(xs))
	gelu64(y64, d64, x64)
	ulp := func(v float64) float64 { return math.Abs(v) * 0x1p-24 }
	bad := 0
	for i, x := range x64 {
		yTol := ulp(y64[i]) + 2e-8*math.Abs(x) + 0x1p-149
		dTol := ulp(d64[i]) + 2e-8*(1+x*x)
		yOK := math.Abs(float64(y[i])-y64[i]) <= yTol || (math.IsNaN(y64[i]) && math.IsNaN(float64(y[i]))) || float64(y[i]) == y64[i]
		dOK := math.Abs(float64(d[i])-d64[i]) <= dTol || (math.IsNaN(d64[i]) && math.IsNaN(float64(d[i])))
		if !yOK || !dOK {
			if bad++; bad <= 10 {
				t.Errorf("case %d: x %v: gelu %v, derivative %v; float64 path %v, %v", i, x, y[i], d[i], y64[i], d64[i])
			}
		}
	}
	for i, c := range []struct{ x, y, d float64 }{{math.Inf(1), math.Inf(1), 1}, {math.Inf(-1), 0, 0}, {-1e30, 0, 0}, {1e30, float64(float32(1e30)), 1}} {
		y, d := make([]float32, 1), make([]float32, 1)
		gelu32(y, d, []float32{float32(c.x)})
		if got, gotD := float64(y[0]), float64(d[0]); got != c.y || gotD != c.d {
			t.Errorf("limit case %d: gelu(%v) = %v, %v, want %v, %v", i, c.x, got, gotD, c.y, c.d)
		}
	}
}

// TestGELUGradientNeedsForward checks that a GELU gradient run without its forward pass reports an error
// instead of reading stale derivatives.
func TestGELUGradientNeedsForward(t *testing.T) {
	g := G.NewGraph()
	x := G.NewVector(g, tensor.Float32, G.WithShape(3), G.WithName("x"))
	y, err := GELU(x)
	if err != nil {
		t.Fatal(err)
	}
	fwd := y.Op().(*geluOp)
	grad := &geluGradOp{fwd: fwd}
	if _, err := grad.Do(tensor.New(tensor.WithBacking([]float32{1, 2, 3}))); err == nil {
		t.Fatal("gradient before the forward pass: got nil error")
	}
}

// BenchmarkGELU measures one forward pass that also stores the derivative, on the hidden layer of a
// mapper at batch 128 ([128, 2048]), on one goroutine: float32 (the assembly kernel where available),
// float32 with geluScalar only, and float64 (math.Erf, the method of the float32 path before the
// approximation). Measured on the loaded 2-core development machine, CPU time per element (perf stat):
// 3 ns, 14 ns and 53 ns.
func BenchmarkGELU(b *testing.B) {
	const n = 128 * 2048
	x32 := benchData(n)
	for i := range x32 {
		x32[i] *= 4
	}
	b.Run("float32", func(b *testing.B) {
		y, d := make([]float32, n), make([]float32, n)
		for b.Loop() {
			gelu32(y, d, x32)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/element")
	})
	b.Run("float32-scalar", func(b *testing.B) {
		y, d := make([]float32, n), make([]float32, n)
		for b.Loop() {
			geluScalar(y, d, x32)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/element")
	})
	b.Run("float64-math.Erf", func(b *testing.B) {
		x := make([]float64, n)
		for i, v := range x32 {
			x[i] = float64(v)
		}
		y, d := make([]float64, n), make([]float64, n)
		for b.Loop() {
			gelu64(y, d, x)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/element")
	})
}

// TestGELUVectorMatchesScalar compares the assembly kernel with geluScalar, value and derivative, on a dense
// grid, every float32 exponent and the special values (placed inside the vector part), with and without the
// derivative: they may differ by one float32 rounding (fused multiply-adds in the kernel). It runs the AVX2
// kernel and, where the processor has AVX-512, the AVX-512 one, on a length that leaves the AVX2 kernel the
// last 4 elements.
func TestGELUVectorMatchesScalar(t *testing.T) {
	if !vector.HasAVX2 {
		t.Skip("no AVX2 and FMA: gelu32 uses geluScalar only")
	}
	saved := vector.HasAVX512
	defer func() { vector.HasAVX512 = saved }()
	for _, on := range []bool{false, true} {
		if on && !saved {
			continue
		}
		vector.HasAVX512 = on
		t.Run(map[bool]string{false: "AVX2", true: "AVX512"}[on], testGELUVectorMatchesScalar)
	}
}

func testGELUVectorMatchesScalar(t *testing.T) {
	xs := []float32{0, float32(math.Copysign(0, -1)), math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 29.999998, -29.999998, 30, -30}
	for x := float32(-40); x <= 40; x += 1.0 / 512 {
		xs = append(xs, x)
	}
	for e := -149; e <= 127; e++ {
		v := float32(math.Ldexp(1.61, e))
		xs = append(xs, v, -v)
	}
	xs = xs[:len(xs)&^7-4]
	y, d, yv, dv, yn := make([]float32, len(xs)), make([]float32, len(xs)), make([]float32, len(xs)), make([]float32, len(xs)), make([]float32, len(xs))
	geluScalar(y, d, xs)
	vector.GELU(yv, dv, xs, &geluVectorConsts)
	vector.GELU(yn, nil, xs, &geluVectorConsts)
	within := func(a, b float32) bool {
		if math.IsNaN(float64(a)) || math.IsNaN(float64(b)) {
			return math.IsNaN(float64(a)) && math.IsNaN(float64(b))
		}
		return a == b || math.Abs(float64(a)-float64(b)) <= math.Abs(float64(b))*0x1p-23
	}
	bad := 0
	for i, x := range xs {
		if !within(yv[i], y[i]) || !within(dv[i], d[i]) || math.Float32bits(yn[i]) != math.Float32bits(yv[i]) {
			if bad++; bad <= 10 {
				t.Errorf("case %d: x %v: kernel %v, %v (without derivative %v); geluScalar %v, %v", i, x, yv[i], dv[i], yn[i], y[i], d[i])
			}
		}
	}
}
