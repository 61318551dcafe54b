//go:build amd64 && !purego

package vector

import (
	"fmt"
	"os"

	"golang.org/x/sys/cpu"
)

// HasAVX2 reports whether the kernels can run: they need AVX2 and FMA. Calling one without it panics.
var HasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// LevelEnv names the environment variable that caps the kernel set: "avx2" runs the AVX2 kernels on a
// processor with AVX-512 too (so that the AVX2 path is tested there); unset or "avx512", the widest the
// processor runs. Any other value panics when the package loads. The portable Go versions are chosen at
// build time, by -tags purego.
const LevelEnv = "BICYC_VECTOR"

// HasAVX512 reports whether the kernels that have an AVX-512 version run it: the processor has AVX-512 F
// (golang.org/x/sys/cpu also checks that the operating system saves the ZMM and mask registers; the tests
// cross-check it with the kernel's /proc/cpuinfo) and LevelEnv does not cap the set at AVX2. Tests set it
// to false to run the AVX2 versions on the same machine.
var HasAVX512 = HasAVX2 && cpu.X86.HasAVX512F && !capAtAVX2(os.Getenv(LevelEnv))

// capAtAVX2 reports whether the value of LevelEnv asks for the AVX2 kernels; it panics on a value it does
// not know, naming the variable, rather than run kernels nobody asked for.
func capAtAVX2(v string) bool {
	switch v {
	case "", "avx512":
		return false
	case "avx2":
		return true
	}
	panic(fmt.Sprintf("vector: %s=%q: want avx2 or avx512 (unset: the widest kernels the processor runs)", LevelEnv, v))
}

// Sum returns Σ x, summed in eight lanes, two accumulators each.
func Sum(x []float32) float32 {
	checkLengths(len(x))
	if len(x) == 0 {
		return 0
	}
	if HasAVX512 {
		return sumAVX512(&x[0], len(x))
	}
	return sumAVX2(&x[0], len(x))
}

// SumSquaredDev returns Σ (x-m)².
func SumSquaredDev(x []float32, m float32) float32 {
	checkLengths(len(x))
	if len(x) == 0 {
		return 0
	}
	if HasAVX512 {
		return sumSquaredDevAVX512(&x[0], len(x), m)
	}
	return sumSquaredDevAVX2(&x[0], len(x), m)
}

// Affine writes y = a·x + b, then max(y, 0) if relu (Go's max: NaN stays NaN, -0 becomes +0), computed with
// a fused multiply-add. y may be x.
func Affine(y, x []float32, a, b float32, relu bool) {
	checkLengths(len(x), len(y))
	if len(x) > 0 {
		if HasAVX512 {
			affineAVX512(&y[0], &x[0], len(x), a, b, relu)
			return
		}
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
	if HasAVX512 {
		return sumAndDotAVX512(&g[0], &x[0], len(g), m)
	}
	return sumAndDotAVX2(&g[0], &x[0], len(g), m)
}

// Affine2 writes d = a·g + b·x + k, computed with two fused multiply-adds. d may be g or x.
func Affine2(d, g, x []float32, a, b, k float32) {
	checkLengths(len(d), len(g), len(x))
	if len(d) > 0 {
		if HasAVX512 {
			affine2AVX512(&d[0], &g[0], &x[0], len(d), a, b, k)
			return
		}
		affine2AVX2(&d[0], &g[0], &x[0], len(d), a, b, k)
	}
}

// AddTo adds s to d element-wise.
func AddTo(d, s []float32) {
	checkLengths(len(d), len(s))
	if len(d) > 0 {
		if HasAVX512 {
			addToAVX512(&d[0], &s[0], len(d))
			return
		}
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

//go:noescape
func sumAVX512(x *float32, n int) float32

//go:noescape
func sumSquaredDevAVX512(x *float32, n int, m float32) float32

//go:noescape
func affineAVX512(y, x *float32, n int, a, b float32, relu bool)

//go:noescape
func sumAndDotAVX512(grad, x *float32, n int, m float32) (sumG, sumGX float32)

//go:noescape
func affine2AVX512(d, grad, x *float32, n int, a, b, k float32)

//go:noescape
func addToAVX512(d, s *float32, n int)
