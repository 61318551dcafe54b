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
	requireAVX2()
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
	requireAVX2()
	if n < 4 || len(argmax) != n || len(top) < 2*n || len(bottom) < 2*n {
		panic("vector: MaxPoolGradRowPair needs len(dy) >= 4, len(argmax) == len(dy) and rows of 2·len(dy)")
	}
	maxPoolGradRowPairAVX2(&top[0], &bottom[0], &dy[0], &argmax[0], n)
}

//go:noescape
func maxPoolGradRowPairAVX2(top, bottom, dy *float32, argmax *uint8, n int)

// MaxPoolWindows3s2 takes the first pass of a 3x3, stride-2 max pooling along one image row: window t
// covers row[2t], row[2t+1], row[2t+2], and for t < len(keys) it writes the window's maximum as an order key
// (the float32 bits b mapped to b ^ (b>>31 & 0x7fffffff), the order MaxPoolRowPair uses) and, in at, the
// column col0+2t+p of the first maximum, p in 0..2. len(keys) must be at least 8, at as long, and row at
// least 2·len(keys)+2 long (the kernel reads one value past the last window).
func MaxPoolWindows3s2(keys, at []int32, row []float32, col0 int32) {
	n := len(keys)
	requireAVX2()
	if n < 8 || len(at) != n || len(row) < 2*n+2 {
		panic("vector: MaxPoolWindows3s2 needs len(keys) >= 8, len(at) == len(keys) and a row of 2·len(keys)+2")
	}
	maxPoolWindows3s2AVX2(&keys[0], &at[0], &row[0], n, col0)
}

// KeepFirstMax merges one more row of window maxima into best and at: where keys[j] is above best[j] (order
// keys compared as int32), best[j], at[j] = keys[j], keyAt[j]; ties keep the earlier row. All four slices
// have the same length, at least 8.
func KeepFirstMax(best, at, keys, keyAt []int32) {
	n := len(best)
	requireAVX2()
	if n < 8 || len(at) != n || len(keys) != n || len(keyAt) != n {
		panic("vector: KeepFirstMax needs four slices of one length, at least 8")
	}
	keepFirstMaxAVX2(&best[0], &at[0], &keys[0], &keyAt[0], n)
}

//go:noescape
func maxPoolWindows3s2AVX2(keys, at *int32, row *float32, n int, col0 int32)

//go:noescape
func keepFirstMaxAVX2(best, at, keys, keyAt *int32, n int)
