//go:build amd64 && !purego

package vector

// MaxPoolRowPair pools the 2x2 windows of two image rows: for j < len(y),
//
//	y[j] = max(top[2j], top[2j+1], bottom[2j], bottom[2j+1])
//
// and argmax[j] is the window position of the maximum (0, 1 top; 2, 3 bottom), the first in that order on
// ties. Values are ordered as their bits map to integers (-0 below +0, NaNs of either sign beyond ±Inf with
// their payloads ordered), so the result is exact and matches a scalar loop over the same keys. len(y) must be
// at least 4 (any length from there: the last block overlaps the one before it), argmax as long as y, and top
// and bottom at least 2·len(y). y must not overlap top or bottom.
func MaxPoolRowPair(y []float32, argmax []uint8, top, bottom []float32) {
	n := len(y)
	if !HasAVX2 {
		panic("vector: kernel called without AVX2 and FMA")
	}
	if n < 4 || len(argmax) != n || len(top) < 2*n || len(bottom) < 2*n {
		panic("vector: MaxPoolRowPair needs len(y) >= 4, len(argmax) == len(y) and rows of 2·len(y)")
	}
	maxPoolRowPairAVX2(&y[0], &argmax[0], &top[0], &bottom[0], n)
}

//go:noescape
func maxPoolRowPairAVX2(y *float32, argmax *uint8, top, bottom *float32, n int)

// MaxPoolGradRowPair is the gradient of MaxPoolRowPair: for j < len(dy), it writes dy[j] to the window
// position argmax[j] (0, 1 in top, 2, 3 in bottom) and +0 to the other three, so that every element of
// top[:2·len(dy)] and bottom[:2·len(dy)] is written. argmax values must be 0-3; a window with another value
// gets zeros. Lengths are as for MaxPoolRowPair, and the rows must not overlap dy.
func MaxPoolGradRowPair(top, bottom, dy []float32, argmax []uint8) {
	n := len(dy)
	if !HasAVX2 {
		panic("vector: kernel called without AVX2 and FMA")
	}
	if n < 4 || len(argmax) != n || len(top) < 2*n || len(bottom) < 2*n {
		panic("vector: MaxPoolGradRowPair needs len(dy) >= 4, len(argmax) == len(dy) and rows of 2·len(dy)")
	}
	maxPoolGradRowPairAVX2(&top[0], &bottom[0], &dy[0], &argmax[0], n)
}

//go:noescape
func maxPoolGradRowPairAVX2(top, bottom, dy *float32, argmax *uint8, n int)
