package vector

import (
	"math"
	"math/rand/v2"
	"testing"
)

// data returns n values uniform in [-1, 1) plus offset.
func data(rng *rand.Rand, n int, offset float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(2*rng.Float64()-1) + offset
	}
	return x
}

var lengths = []int{0, 8, 16, 24, 40, 784 &^ 7, 8192}

// closeTo reports got == want (infinities), |got-want| <= tol·scale, or both NaN.
func closeTo(got, want, tol, scale float64) bool {
	if got == want {
		return true
	}
	if math.IsNaN(got) || math.IsNaN(want) {
		return math.IsNaN(got) && math.IsNaN(want)
	}
	return math.Abs(got-want) <= tol*scale
}

func TestReductions(t *testing.T) { forEachLevel(t, testReductions) }

func testReductions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i, n := range lengths {
		x, g := data(rng, n, 3), data(rng, n, 0)
		const m = 2.75
		var sum, sq, sumG, sumGX, scale float64
		for j := range x {
			sum += float64(x[j])
			sq += (float64(x[j]) - m) * (float64(x[j]) - m)
			sumG += float64(g[j])
			sumGX += float64(g[j]) * (float64(x[j]) - m)
			scale += math.Abs(float64(x[j]))
		}
		scale = math.Max(scale, 1)
		gotG, gotGX := SumAndDot(g, x, m)
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"Sum", float64(Sum(x)), sum},
			{"SumSquaredDev", float64(SumSquaredDev(x, m)), sq},
			{"SumAndDot Σg", float64(gotG), sumG},
			{"SumAndDot Σg(x-m)", float64(gotGX), sumGX},
		} {
			if !closeTo(c.got, c.want, 1e-6, scale) {
				t.Errorf("case %d (n %d): %s = %v, want %v", i, n, c.name, c.got, c.want)
			}
		}
	}
}

func TestElementwise(t *testing.T) { forEachLevel(t, testElementwise) }

func testElementwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1e-40, -1e-40, 0.5}
	for i, n := range lengths {
		x, y, g := data(rng, n, 0), data(rng, n, 0), data(rng, n, 0)
		if n >= len(specials) {
			copy(x, specials)
		}
		for j := range y { // a ReLU output: +0 or positive, with a NaN
			y[j] = max(y[j], 0)
		}
		if n > 0 {
			y[n-1] = float32(math.NaN())
		}
		const a, b, k = 1.5, -0.25, 0.125
		for _, relu := range []bool{false, true} {
			got := make([]float32, n)
			Affine(got, x, a, b, relu)
			for j, v := range x {
				want := a*float64(v) + b
				if relu {
					want = max(want, 0) // Go's max: NaN stays NaN, -0 becomes +0
				}
				if !closeTo(float64(got[j]), want, 1e-7, math.Max(1, math.Abs(want))) || (want == 0 && math.Signbit(float64(got[j])) != math.Signbit(want)) {
					t.Errorf("case %d: Affine(relu %v) at %d of %v: %v, want %v", i, relu, j, v, got[j], want)
				}
			}
		}
		kept := make([]float32, n)
		KeepWherePositive(kept, y, g)
		d := make([]float32, n)
		Affine2(d, g, x, a, b, k)
		sum := append([]float32(nil), x...)
		AddTo(sum, g)
		for j := range x {
			want := g[j]
			if y[j] == 0 {
				want = 0
			}
			if math.Float32bits(kept[j]) != math.Float32bits(want) {
				t.Errorf("case %d: KeepWherePositive at %d (y %v, dy %v): %v, want %v", i, j, y[j], g[j], kept[j], want)
			}
			if w := a*float64(g[j]) + b*float64(x[j]) + k; !closeTo(float64(d[j]), w, 2.5e-7, math.Max(1, math.Abs(w))) {
				t.Errorf("case %d: Affine2 at %d: %v, want %v", i, j, d[j], w)
			}
			if w := x[j] + g[j]; !closeTo(float64(sum[j]), float64(w), 0, 1) {
				t.Errorf("case %d: AddTo at %d: %v, want %v", i, j, sum[j], w)
			}
		}
	}
}

func TestKernelsRejectMisuse(t *testing.T) {
	if !HasAVX2 {
		t.Skip("no AVX2 and FMA")
	}
	a, b := make([]float32, 8), make([]float32, 16)
	for i, call := range []func(){
		func() { Sum(make([]float32, 7)) },
		func() { SumSquaredDev(make([]float32, 9), 0) },
		func() { Affine(a, b, 1, 0, false) },
		func() { KeepWherePositive(a, a, b) },
		func() { SumAndDot(a, b, 0) },
		func() { Affine2(a, a, b, 1, 1, 1) },
		func() { AddTo(b, a) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("case %d: no panic", i)
				}
			}()
			call()
		}()
	}
}
