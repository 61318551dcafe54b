//go:build amd64 && !purego

package vector

// GELU writes gelu(x) to y and, unless d is nil, gelu'(x) to d, four float64 lanes at a time (eight with AVX-512, HasAVX512), with the
// formula described in gelu_amd64.s and the constants c. len(x) must be a multiple of 4, y and a non-nil d
// as long as x, and HasAVX2 true; otherwise GELU panics.
func GELU(y, d, x []float32, c *GELUConstants) {
	requireAVX2()
	if len(x)%4 != 0 || len(y) != len(x) || (d != nil && len(d) != len(x)) {
		panic("vector: GELU needs slices of equal lengths that are multiples of 4")
	}
	if len(x) == 0 {
		return
	}
	// The AVX-512 kernel takes multiples of 8; the AVX2 one runs the last 4 of a length that is not.
	n, from := len(x), 0
	if HasAVX512 {
		from = n &^ 7
		if from > 0 {
			geluAVX512(&y[0], dPointer(d, 0), &x[0], from, c)
		}
	}
	if from < n {
		geluAVX2(&y[from], dPointer(d, from), &x[from], n-from, c)
	}
}

// dPointer returns &d[i], or nil for a nil d (no derivative wanted).
func dPointer(d []float32, i int) *float32 {
	if d == nil {
		return nil
	}
	return &d[i]
}

// geluAVX2 is implemented in gelu_amd64.s; n is a positive multiple of 4 and d may be nil.
//
//go:noescape
func geluAVX2(y, d, x *float32, n int, consts *GELUConstants)

// geluAVX512 is implemented in gelu512_amd64.s; n is a positive multiple of 8 and d may be nil.
//
//go:noescape
func geluAVX512(y, d, x *float32, n int, consts *GELUConstants)
