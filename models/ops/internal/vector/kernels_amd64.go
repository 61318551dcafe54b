//go:build amd64 && !purego

package vector

import "golang.org/x/sys/cpu"

// HasAVX2 reports whether the kernels can run: they need AVX2 and FMA. Calling one without it panics.
var HasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// Sum returns Σ x, summed in eight lanes, two accumulators each.
func Sum(x []float32) float32 {
	checkLengths(len(x))
	if len(x) == 0 {
		return 0
	}
	return sumAVX2(&x[0], len(x))
}

// SumSquaredDev returns Σ (x-m)².
func SumSquaredDev(x []float32, m float32) float32 {
	checkLengths(len(x))
	if len(x) == 0 {
		return 0
	}
	return sumSquaredDevAVX2(&x[0], len(x), m)
}

// Affine writes y = a·x + b, then max(y, 0) if relu (Go's max: NaN stays NaN, -0 becomes +0), computed with
// a fused multiply-add. y may be x.
func Affine(y, x []float32, a, b float32, relu bool) {
	checkLengths(len(x), len(y))
	if len(x) > 0 {
		affineAVX2(&y[0], &x[0], len(x), a, b, relu)
	}
}

// KeepWherePositive writes g = dy where y is not +0 and g = 0 where it is, for y >= 0 (a ReLU output, never
// -0; a NaN keeps dy). g may be dy.
func KeepWherePositive(g, y, dy []float32) {
	checkLengths(len(y), len(g), len(dy))
	if len(y) > 0 {
		keepWherePositiveAVX2(&g[0], &y[0], &dy[0], len(y))
	}
}

// SumAndDot returns Σ g and Σ g·(x-m).
func SumAndDot(g, x []float32, m float32) (sumG, sumGX float32) {
	checkLengths(len(g), len(x))
	if len(g) == 0 {
		return 0, 0
	}
	return sumAndDotAVX2(&g[0], &x[0], len(g), m)
}

// Affine2 writes d = a·g + b·x + k, computed with two fused multiply-adds. d may be g or x.
func Affine2(d, g, x []float32, a, b, k float32) {
	checkLengths(len(d), len(g), len(x))
	if len(d) > 0 {
		affine2AVX2(&d[0], &g[0], &x[0], len(d), a, b, k)
	}
}

// AddTo adds s to d element-wise.
func AddTo(d, s []float32) {
	checkLengths(len(d), len(s))
	if len(d) > 0 {
		addToAVX2(&d[0], &s[0], len(d))
	}
}

// requireAVX2 panics unless the kernels can run.
func requireAVX2() {
	if !HasAVX2 {
		panic("vector: kernel called without AVX2 and FMA")
	}
}

// checkLengths panics unless the kernels can run and all lengths are equal multiples of 8.
func checkLengths(n ...int) {
	requireAVX2()
	for _, l := range n {
		if l != n[0] || l%8 != 0 {
			panic("vector: kernel needs slices of equal lengths that are multiples of 8")
		}
	}
}

//go:noescape
func sumAVX2(x *float32, n int) float32

//go:noescape
func sumSquaredDevAVX2(x *float32, n int, m float32) float32

//go:noescape
func affineAVX2(y, x *float32, n int, a, b float32, relu bool)

//go:noescape
func keepWherePositiveAVX2(out, y, dy *float32, n int)

//go:noescape
func sumAndDotAVX2(grad, x *float32, n int, m float32) (sumG, sumGX float32)

//go:noescape
func affine2AVX2(d, grad, x *float32, n int, a, b, k float32)

//go:noescape
func addToAVX2(d, s *float32, n int)
