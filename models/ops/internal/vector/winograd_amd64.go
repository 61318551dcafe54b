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
		winogradRows(&a[0], &b[0], &c[0], &e[0], &r0[0], &r1[0], &r2[0], &r3[0], len(a))
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
		winogradColumns(&o0[0], &o1[0], &o2[0], &o3[0], &row[0], len(o0))
	}
}

// WinogradInputPlane writes Winograd's F(2x2, 3x3) input transform Bᵀ d B of the down x across tiles d of
// one zero-padded plane, (2·down+2) rows of 2·across+2 elements followed by at least 8 more, point ξ of
// tile t = ty·across + tx to v[ξ·stride + t]: per row of tiles, WinogradRows over the four padded rows it
// spans (rounded up to a multiple of 8 elements, into rows), then WinogradColumns on each of the four
// results, rounded up to a multiple of 8 tiles. Each row of tiles thus writes up to 7 tiles past its end,
// which the caller must either write again afterwards or not use; rows is scratch of at least
// WinogradInputScratch(across) elements. One call per plane, with its bounds checked once, costs much less
// than a call per row of tiles on the small planes of a network's last stages.
func WinogradInputPlane(v []float32, stride int, padded, rows []float32, down, across int) {
	width := 2*across + 2
	rw, n := roundUp8(width), roundUp8(across)
	if !HasAVX2 || down < 0 || across < 0 || stride < 0 || len(padded) < (2*down+1)*width+rw ||
		len(rows) < WinogradInputScratch(across) || len(v) < 15*stride+(down-1)*across+n {
		panic("vector: WinogradInputPlane needs AVX2 and a padded plane, scratch and points of the sizes it documents")
	}
	if across == 0 {
		return
	}
	for ty := 0; ty < down; ty++ {
		in := 2 * ty * width
		winogradRows(&rows[0], &rows[rw], &rows[2*rw], &rows[3*rw],
			&padded[in], &padded[in+width], &padded[in+2*width], &padded[in+3*width], rw)
		for k := 0; k < 4; k++ {
			o := 4*k*stride + ty*across
			winogradColumns(&v[o], &v[o+stride], &v[o+2*stride], &v[o+3*stride], &rows[k*rw], n)
		}
	}
}

// WinogradInputScratch returns the scratch WinogradInputPlane needs for planes of across tiles.
func WinogradInputScratch(across int) int { return 4*roundUp8(2*across+2) + 2*roundUp8(across) + 2 }

// roundUp8 returns n rounded up to a multiple of 8, the kernels' width.
func roundUp8(n int) int { return (n + 7) &^ 7 }

// WinogradOutput writes Winograd's F(2x2, 3x3) output transform Aᵀ M A of n tiles, n = len(even)/2 a
// multiple of 8, point ξ of tile t read from m[ξ·stride + t] (the 4x4 points row-major): each tile's output
// row 0 goes to even[2t], even[2t+1] and row 1 to odd[2t], odd[2t+1], so that even and odd hold the output
// rows of a row of tiles side by side, as they lie in the output plane:
//
//	s_j = M0j + M1j + M2j, t_j = M1j - M2j - M3j, row 0 = (s0+s1+s2, s1-s2-s3), row 1 = (t0+t1+t2, t1-t2-t3)
func WinogradOutput(even, odd, m []float32, stride int) {
	checkLengths(len(even), len(odd))
	n := len(even) / 2
	if n%8 != 0 || stride < n || len(m) < 15*stride+n {
		panic("vector: WinogradOutput needs a multiple of 8 tiles and 16 points of them in m")
	}
	if n > 0 {
		winogradOutputAVX2(&even[0], &odd[0], &m[0], stride, n)
	}
}

// WinogradOutputGrad writes A t Aᵀ, the adjoint of the output transform, of n 2x2 tiles t = (a b / c d),
// n = len(even)/2 a multiple of 8, (a, b) read from even[2t], even[2t+1] and (c, d) from odd (the layout
// WinogradOutput writes), point ξ of tile t to m[ξ·stride + t]: the rows of A t, (a, b), (a+c, b+d),
// (a-c, b-d) and (-c, -d), each (x, y) times Aᵀ give the points (x, x+y, x-y, -y).
func WinogradOutputGrad(m []float32, stride int, even, odd []float32) {
	checkLengths(len(even), len(odd))
	n := len(even) / 2
	if n%8 != 0 || stride < n || len(m) < 15*stride+n {
		panic("vector: WinogradOutputGrad needs a multiple of 8 tiles and room for 16 points of them in m")
	}
	if n > 0 {
		winogradOutputGradAVX2(&m[0], stride, &even[0], &odd[0], n)
	}
}

// WinogradFilters writes Winograd's F(2x2, 3x3) filter transform G f Gᵀ of the n 3x3 filters f in w (9
// elements each, row-major; n = len(w)/9, a multiple of 8), point ξ of filter k to u[offsets[ξ] + k]: the
// offsets place the 16 points' matrices, and permuted they give other layouts (the transform of a filter
// rotated by 180° is that of the filter with points 0 and 3 of each row and column swapped). The filters are
// gathered 8 at a time, so that the transform runs 8 filters wide.
func WinogradFilters(u []float32, offsets *[16]int, w []float32) {
	n := len(w) / 9
	if !HasAVX2 || n%8 != 0 || len(w) != 9*n {
		panic("vector: WinogradFilters needs AVX2 and a multiple of 8 filters of 9 elements")
	}
	var bytes [16]int
	for i, o := range offsets {
		if o < 0 || o+n > len(u) {
			panic("vector: WinogradFilters offset out of range")
		}
		bytes[i] = 4 * o
	}
	if n > 0 {
		winogradFiltersAVX2(&u[0], &bytes, &w[0], &nineApart, n)
	}
}

// WinogradFilterAdjoint writes Gᵀ f G, the adjoint of WinogradFilters, of n sets of 16 points f, point ξ of
// set k read from f[ξ·stride + k], element e of the 3x3 result (row-major) to d[e·n + k]; n = len(d)/9, a
// multiple of 8. The results are laid out by element, not by filter, so that they are stored 8 sets wide;
// the caller interleaves them.
func WinogradFilterAdjoint(d, f []float32, stride int) {
	n := len(d) / 9
	if !HasAVX2 || n%8 != 0 || len(d) != 9*n || stride < n || len(f) < 15*stride+n {
		panic("vector: WinogradFilterAdjoint needs AVX2, a multiple of 8 sets and 16 points of each")
	}
	if n > 0 {
		winogradFilterAdjointAVX2(&d[0], &f[0], stride, n)
	}
}

//go:noescape
func winogradFilterAdjointAVX2(d, f *float32, stride, n int)

// nineApart holds the gather offsets of element 0 of 8 consecutive 3x3 filters.
var nineApart = [8]int32{0, 9, 18, 27, 36, 45, 54, 63}

//go:noescape
func winogradFiltersAVX2(u *float32, offsets *[16]int, w *float32, index *[8]int32, n int)

//go:noescape
func winogradOutputAVX2(even, odd, m *float32, stride, n int)

//go:noescape
func winogradOutputGradAVX2(m *float32, stride int, even, odd *float32, n int)

//go:noescape
func winogradRowsAVX2(a, b, c, e, r0, r1, r2, r3 *float32, n int)

//go:noescape
func winogradRowsAVX512(a, b, c, e, r0, r1, r2, r3 *float32, n int)

// winogradRows runs the AVX-512 version of the row pass where HasAVX512 is set, else the AVX2 one.
func winogradRows(a, b, c, e, r0, r1, r2, r3 *float32, n int) {
	if HasAVX512 {
		winogradRowsAVX512(a, b, c, e, r0, r1, r2, r3, n)
		return
	}
	winogradRowsAVX2(a, b, c, e, r0, r1, r2, r3, n)
}

//go:noescape
func winogradColumnsAVX2(o0, o1, o2, o3, row *float32, n int)

//go:noescape
func winogradColumnsAVX512(o0, o1, o2, o3, row *float32, n int)

// winogradColumns runs the AVX-512 version of the column pass where HasAVX512 is set, else the AVX2 one.
func winogradColumns(o0, o1, o2, o3, row *float32, n int) {
	if HasAVX512 {
		winogradColumnsAVX512(o0, o1, o2, o3, row, n)
		return
	}
	winogradColumnsAVX2(o0, o1, o2, o3, row, n)
}
