//go:build !amd64 || purego

package vector

// HasAVX2 is false: there are no kernels for this architecture, and calling one panics.
const HasAVX2 = false

// HasAVX512 is false: see HasAVX2. (A variable, as on amd64, so that the tests can set it.)
var HasAVX512 = false

func unavailable() { panic("vector: kernel called on an architecture without kernels") }

// Sum panics: callers check HasAVX2 first.
func Sum(x []float32) float32 { unavailable(); return 0 }

// SumSquaredDev panics: callers check HasAVX2 first.
func SumSquaredDev(x []float32, m float32) float32 { unavailable(); return 0 }

// Affine panics: callers check HasAVX2 first.
func Affine(y, x []float32, a, b float32, relu bool) { unavailable() }

// KeepWherePositive panics: callers check HasAVX2 first.
func KeepWherePositive(g, y, dy []float32) { unavailable() }

// SumAndDot panics: callers check HasAVX2 first.
func SumAndDot(g, x []float32, m float32) (sumG, sumGX float32) { unavailable(); return 0, 0 }

// Affine2 panics: callers check HasAVX2 first.
func Affine2(d, g, x []float32, a, b, k float32) { unavailable() }

// AddTo panics: callers check HasAVX2 first.
func AddTo(d, s []float32) { unavailable() }
