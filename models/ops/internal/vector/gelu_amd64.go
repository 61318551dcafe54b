//go:build amd64 && !purego

package vector

// GELU writes gelu(x) to y and, unless d is nil, gelu'(x) to d, four float64 lanes at a time, with the
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
	var dp *float32
	if d != nil {
		dp = &d[0]
	}
	geluAVX2(&y[0], dp, &x[0], len(x), c)
}

// geluAVX2 is implemented in gelu_amd64.s; n is a positive multiple of 4 and d may be nil.
//
//go:noescape
func geluAVX2(y, d, x *float32, n int, consts *GELUConstants)
