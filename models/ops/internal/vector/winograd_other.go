//go:build !amd64 || purego

package vector

// WinogradRows panics: callers check HasAVX2 first.
func WinogradRows(a, b, c, e, r0, r1, r2, r3 []float32) { unavailable() }

// WinogradColumns panics: callers check HasAVX2 first.
func WinogradColumns(o0, o1, o2, o3, row []float32) { unavailable() }

// WinogradOutput panics: callers check HasAVX2 first.
func WinogradOutput(even, odd, m []float32, stride int) { unavailable() }

// WinogradOutputGrad panics: callers check HasAVX2 first.
func WinogradOutputGrad(m []float32, stride int, even, odd []float32) { unavailable() }

// WinogradFilters panics: callers check HasAVX2 first.
func WinogradFilters(u []float32, offsets *[16]int, w []float32) { unavailable() }

// WinogradFilterAdjoint panics: callers check HasAVX2 first.
func WinogradFilterAdjoint(d, f []float32, stride int) { unavailable() }

// WinogradInputPlane panics: callers check HasAVX2 first.
func WinogradInputPlane(v []float32, stride int, padded, rows []float32, down, across int) {
	unavailable()
}

// WinogradInputScratch returns 0: WinogradInputPlane is unavailable.
func WinogradInputScratch(across int) int { return 0 }

// WinogradColumns43 panics: callers check HasAVX2 first.
func WinogradColumns43(o [][]float32, row []float32) { unavailable() }

// WinogradInput43Plane panics: callers check HasAVX2 first.
func WinogradInput43Plane(v []float32, stride int, padded, rows []float32, width, down, across int) {
	unavailable()
}

// WinogradOutputInterleave43 panics: callers check HasAVX2 first.
func WinogradOutputInterleave43(out []float32, m [][]float32) { unavailable() }

// WinogradGradColumns43 panics: callers check HasAVX2 first.
func WinogradGradColumns43(o [][]float32, row []float32) { unavailable() }

// Combine43 panics: callers check HasAVX2 first.
func Combine43(k Kernel43, o, in [][]float32) { unavailable() }
