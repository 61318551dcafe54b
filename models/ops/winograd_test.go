package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// winogradCases are 3x3 same-padding convolutions [n, c, h, w] -> o: odd and even sizes, planes of one and
// two pixels, a batch of one, channel counts that are multiples of nothing, several chunks per goroutine
// (24 images of 256 tiles) and ResNet-18's fourth stage at 32x32 and 224x224 inputs.
var winogradCases = []struct{ n, c, h, w, o int }{
	{2, 3, 5, 5, 4},
	{1, 5, 7, 6, 3},
	{3, 17, 8, 9, 19},
	{1, 2, 1, 1, 3},
	{2, 1, 2, 1, 2},
	{4, 33, 4, 4, 31},
	{24, 8, 32, 32, 6},
	{5, 64, 7, 7, 64},
	{8, 512, 4, 4, 512},
	{4, 512, 7, 7, 512},
	{3, 17, 8, 12, 19},
	{2, 64, 16, 16, 64},
	{2, 256, 8, 8, 256},
}

// winogradTolerance is the largest allowed max |Winograd - im2col| relative to max |im2col| over a case's
// outputs (the output or a gradient), for F(2x2, 3x3) or, with f43, F(4x4, 3x3). The worst measured over
// winogradCases, on one to three goroutines: F(2x2, 3x3) 6.8e-7 in float32 (the input gradient with 512
// channels at 4x4; 6.7e-7 for the output at 7x7), 1.3e-15 in float64; F(4x4, 3x3), whose coefficients
// reach 8 and 1/24, 1.6e-5 in float32 (the input gradient with 512 channels at 7x7), 1.9e-14 in float64.
func winogradTolerance(dt tensor.Dtype, f43 bool) float64 {
	switch {
	case dt == tensor.Float32 && f43:
		return 6e-5
	case dt == tensor.Float32:
		return 2e-6
	case f43:
		return 1e-13
	}
	return 1e-14
}

// TestWinogradMatchesIm2col compares the Winograd forward convolution and gradients with the im2col ones
// on random data, on one to three goroutines: F(2x2, 3x3) and F(4x4, 3x3) on every case, whichever
// winogradForward would choose.
func TestWinogradMatchesIm2col(t *testing.T) {
	defer SetThreads(0)
	for _, threads := range []int{1, 2, 3} {
		SetThreads(threads)
		for i, c := range winogradCases {
			g := convGeom{n: c.n, c: c.c, h: c.h, w: c.w, o: c.o, k: 3, stride: 1, pad: 1, oh: c.h, ow: c.w}
			t.Run(fmt.Sprintf("threads%d/case%d/float32", threads, i), func(t *testing.T) {
				compareWinograd[float32](t, g, uint64(i))
			})
			t.Run(fmt.Sprintf("threads%d/case%d/float64", threads, i), func(t *testing.T) {
				compareWinograd[float64](t, g, uint64(i))
			})
		}
	}
}

// compareWinograd checks both algorithms' forward convolution and gradients against the im2col paths for g, with inputs in [-1, 1) from seed, and logs the relative errors.
func compareWinograd[T float](t *testing.T, g convGeom, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	x, w, dy := randSlice[T](rng, g.n*g.c*g.inPlane()), randSlice[T](rng, g.o*g.patch()), randSlice[T](rng, g.n*g.o*g.outPlane())
	output := func() []T { y := make([]T, len(dy)); im2colForward(g, x, w, y); return y }
	inputGrad := func() []T { dx := make([]T, len(x)); im2colInputGrad(g, w, dy, dx); return dx }
	filterGrad := func() []T { dw := make([]T, len(w)); im2colFilterGrad(g, x, dy, dw); return dw }
	for _, f := range []struct {
		name      string
		f43       bool
		wino, ref func() []T
	}{
		{"output F(2x2,3x3)", false, func() []T { y := nanSlice[T](len(dy)); winograd23Forward(g, x, w, y); return y }, output},
		{"output F(4x4,3x3)", true, func() []T { y := nanSlice[T](len(dy)); winograd43Forward(g, x, w, y); return y }, output},
		{"input gradient F(2x2,3x3)", false, func() []T { dx := nanSlice[T](len(x)); winograd23InputGrad(g, w, dy, dx); return dx }, inputGrad},
		{"input gradient F(4x4,3x3)", true, func() []T { dx := nanSlice[T](len(x)); winograd43InputGrad(g, w, dy, dx); return dx }, inputGrad},
		{"filter gradient F(2x2,3x3)", false, func() []T { dw := nanSlice[T](len(w)); winograd23FilterGrad(g, x, dy, dw); return dw }, filterGrad},
		{"filter gradient F(4x4,3x3)", true, func() []T { dw := nanSlice[T](len(w)); winograd43FilterGrad(g, x, dy, dw); return dw }, filterGrad},
	} {
		var zero T
		tol := winogradTolerance(tensor.Float64, f.f43)
		if _, ok := any(zero).(float32); ok {
			tol = winogradTolerance(tensor.Float32, f.f43)
		}
		worst, scale := maxDifference(f.wino(), f.ref())
		rel := worst / scale
		t.Logf("%v %s: max |winograd-im2col| = %.2g, relative to max |im2col| = %.3g: %.2g", g, f.name, worst, scale, rel)
		if !(rel <= tol) {
			t.Errorf("%v %s: relative error %.3g, more than %.3g", g, f.name, rel, tol)
		}
	}
}

// maxDifference returns max |got-want| (NaN if got has a NaN) and max |want|.
func maxDifference[T float](got, want []T) (worst, scale float64) {
	for i := range want {
		if math.IsNaN(float64(got[i])) {
			return math.NaN(), 1
		}
		worst = math.Max(worst, math.Abs(float64(got[i]-want[i])))
		scale = math.Max(scale, math.Abs(float64(want[i])))
	}
	return worst, scale
}

// randSlice returns n values uniform in [-1, 1).
func randSlice[T float](rng *rand.Rand, n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = T(2*rng.Float64() - 1)
	}
	return s
}

// nanSlice returns n NaNs, so that an output position the Winograd path forgets to write fails the test.
func nanSlice[T float](n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = T(math.NaN())
	}
	return s
}

// TestConv2dWinograd checks Conv2d through the Winograd paths (their thresholds lowered to zero) against
// finite differences (the small cases) and against gorgonia's convolution, output and both gradients.
func TestConv2dWinograd(t *testing.T) {
	defer func(m int, s float64) { winogradMinChannels, winogradMinSaving = m, s }(winogradMinChannels, winogradMinSaving)
	winogradMinChannels, winogradMinSaving = 0, 0
	for _, dt := range floatTypes {
		// The first six cases take F(2x2, 3x3), the last three F(4x4, 3x3) (the first of them in all passes).
		for i, c := range append(winogradCases[:6:6], struct{ n, c, h, w, o int }{1, 2, 16, 16, 2},
			struct{ n, c, h, w, o int }{1, 2, 8, 8, 3}, winogradCases[10]) {
			x, w := []int{c.n, c.c, c.h, c.w}, []int{c.o, c.c, 3, 3}
			t.Run(fmt.Sprintf("%v/case%d", dt, i), func(t *testing.T) {
				if g := (convGeom{c: c.c, o: c.o, k: 3, stride: 1, pad: 1, oh: c.h, ow: c.w}); !g.winograd() || g.winograd43() != (i >= 6) {
					t.Fatalf("%v does not take the Winograd path it tests (F(4x4, 3x3): %v)", g, i >= 6)
				}
				rng := rand.New(rand.NewPCG(uint64(i), 8))
				inputs := []*tensor.Dense{asDtype(randDense(rng, x...), dt), asDtype(randDense(rng, w...), dt)}
				// Finite differences run the graph twice per input value: only the small cases. In float32
				// F(4x4, 3x3)'s rounding of the cost, about ten times F(2x2, 3x3)'s, reaches the differences
				// (1.2e-4 relative measured, against 1e-4 allowed): its gradients are checked in float64,
				// and its float32 results against gorgonia's below.
				if inputs[0].Size()+inputs[1].Size() <= 1000 && (dt == tensor.Float64 || i < 6) {
					checkGrad(t, cost(ownConv(1, 1)), inputs, gradTolerance(dt))
				}
				compareWithStock(t, inputs, dt, 1e-5, ownConv(1, 1), stockConv(1, 1))
			})
		}
	}
}

// TestWinogradChoice pins which convolutions of ResNet-18 and of the default backbone take the Winograd path.
func TestWinogradChoice(t *testing.T) {
	for i, c := range []struct {
		g    convGeom
		want bool
	}{
		{convGeom{c: 64, o: 64, k: 3, stride: 1, pad: 1, oh: 32, ow: 32}, true},
		{convGeom{c: 64, o: 64, k: 3, stride: 1, pad: 1, oh: 56, ow: 56}, true},
		{convGeom{c: 512, o: 512, k: 3, stride: 1, pad: 1, oh: 4, ow: 4}, true},
		{convGeom{c: 512, o: 512, k: 3, stride: 1, pad: 1, oh: 7, ow: 7}, true}, // saves 1.72 times
		{convGeom{c: 64, o: 64, k: 3, stride: 1, pad: 1, oh: 27, ow: 27}, true}, // saves 2.09 times
		{convGeom{c: 64, o: 128, k: 3, stride: 1, pad: 1, oh: 7, ow: 7}, true},  // default backbone, conv3
		{convGeom{c: 64, o: 64, k: 3, stride: 1, pad: 1, oh: 5, ow: 5}, false},  // saves 1.56 times
		{convGeom{c: 32, o: 64, k: 3, stride: 1, pad: 1, oh: 14, ow: 14}, true}, // default backbone, conv2
		{convGeom{c: 8, o: 8, k: 3, stride: 1, pad: 1, oh: 32, ow: 32}, true},
		{convGeom{c: 4, o: 4, k: 3, stride: 1, pad: 1, oh: 32, ow: 32}, false},
		{convGeom{c: 1, o: 32, k: 3, stride: 1, pad: 1, oh: 28, ow: 28}, false}, // default backbone, conv1
		{convGeom{c: 64, o: 128, k: 3, stride: 2, pad: 1, oh: 16, ow: 16}, false},
		{convGeom{c: 64, o: 128, k: 1, stride: 1, pad: 0, oh: 32, ow: 32}, false},
		{convGeom{c: 3, o: 64, k: 3, stride: 1, pad: 1, oh: 32, ow: 32}, false},
		{convGeom{c: 64, o: 64, k: 7, stride: 2, pad: 3, oh: 112, ow: 112}, false},
	} {
		if got := c.g.winograd(); got != c.want {
			t.Errorf("case %d %v: winograd %v, want %v", i, c.g, got, c.want)
		}
	}
	for i, c := range []struct {
		g    convGeom
		want bool
	}{
		{convGeom{c: 64, o: 64, k: 3, stride: 1, pad: 1, oh: 32, ow: 32}, true},    // ResNet-18 at 32x32: layer1
		{convGeom{c: 128, o: 128, k: 3, stride: 1, pad: 1, oh: 16, ow: 16}, true},  // layer2
		{convGeom{c: 256, o: 256, k: 3, stride: 1, pad: 1, oh: 8, ow: 8}, true},    // layer3
		{convGeom{c: 512, o: 512, k: 3, stride: 1, pad: 1, oh: 4, ow: 4}, false},   // layer4: one tile per plane
		{convGeom{c: 64, o: 64, k: 3, stride: 1, pad: 1, oh: 56, ow: 56}, true},    // at 224x224: layer1
		{convGeom{c: 256, o: 256, k: 3, stride: 1, pad: 1, oh: 14, ow: 14}, false}, // layer3: overhanging tiles
		{convGeom{c: 512, o: 512, k: 3, stride: 1, pad: 1, oh: 7, ow: 7}, false},
		{convGeom{c: 32, o: 64, k: 3, stride: 1, pad: 1, oh: 14, ow: 14}, false}, // default backbone
		{convGeom{c: 4, o: 4, k: 3, stride: 1, pad: 1, oh: 32, ow: 32}, false},   // no Winograd at all
	} {
		if got := c.g.winograd43(); got != c.want {
			t.Errorf("F(4x4, 3x3) case %d %v: %v, want %v", i, c.g, got, c.want)
		}
		if got, want := c.g.winograd43FilterGradient(), c.want && c.g.oh >= 16; got != want {
			t.Errorf("F(4x4, 3x3) filter gradient, case %d %v: %v, want %v", i, c.g, got, want)
		}
	}
}
