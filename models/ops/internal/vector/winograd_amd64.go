//go:build amd64 && !purego

package vector

// WinogradRows writes the row pass of Winograd's F(2x2, 3x3) input transform, Bᵀ d for a row of 4x4 tiles,
// from the four input rows r0..r3 they span:
//
//	a = r0 - r2, b = r1 + r2, c = r2 - r1, e = r1 - r3
//
// All slices have one length, a multiple of 8.
func WinogradRows(a, b, c, e, r0, r1, r2, r3 []float32) {
	checkLengths(len(a), len(b), len(c), len(e), len(r0), len(r1), len(r2), len(r3))
	if len(a) > 0 {
		winogradRowsAVX2(&a[0], &b[0], &c[0], &e[0], &r0[0], &r1[0], &r2[0], &r3[0], len(a))
	}
}

// WinogradColumns writes the column pass of Winograd's F(2x2, 3x3) input transform, row·B for the tiles of
// one row of Bᵀ d, tile t covering row[2t .. 2t+3]:
//
//	o0[t] = row[2t] - row[2t+2], o1[t] = row[2t+1] + row[2t+2],
//	o2[t] = row[2t+2] - row[2t+1], o3[t] = row[2t+1] - row[2t+3]
//
// o0..o3 have one length n, a multiple of 8, and row at least 2n+2 elements.
func WinogradColumns(o0, o1, o2, o3, row []float32) {
	checkLengths(len(o0), len(o1), len(o2), len(o3))
	if len(row) < 2*len(o0)+2 {
		panic("vector: WinogradColumns needs a row of 2n+2 elements for n tiles")
	}
	if len(o0) > 0 {
		winogradColumnsAVX2(&o0[0], &o1[0], &o2[0], &o3[0], &row[0], len(o0))
	}
}

//go:noescape
func winogradRowsAVX2(a, b, c, e, r0, r1, r2, r3 *float32, n int)

//go:noescape
func winogradColumnsAVX2(o0, o1, o2, o3, row *float32, n int)
