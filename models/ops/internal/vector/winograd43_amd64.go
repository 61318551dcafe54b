//go:build amd64 && !purego

package vector

// The passes of Winograd's F(4x4, 3x3) (Lavin and Gray, 2016) as element-wise combinations of whole
// slices: each output slice is a fixed linear combination of the input slices at the same index, so that
// one call transforms a row of tiles, or one point of every tile, eight lanes at a time. Package ops holds
// the same combinations in Go (winogradInput43 and its siblings), factored the same way, for float64, for
// other processors and for the remainder of a length that is not a multiple of 8; here each multiply-add is
// fused.

// WinogradInput43 writes Bᵀ r, the input transform of F(4x4, 3x3), at every index of the six slices r:
//
//	o0 = (r4 + 4·r0) - 5·r2,  o1 = (r3 + r4) - 4·(r1 + r2),  o2 = (r4 - r3) + 4·(r1 - r2),
//	o3 = (r4 - r2) - 2·(r1 - r3),  o4 = (r4 - r2) + 2·(r1 - r3),  o5 = (r5 + 4·r1) - 5·r3
//
// All slices have the length of o[0], a multiple of 8.
func WinogradInput43(o, r *[6][]float32) {
	n := len(o[0])
	var op, rp [6]*float32
	for i := range o {
		if n%8 != 0 || len(o[i]) != n || len(r[i]) != n {
			panic("vector: WinogradInput43 needs twelve slices of one length, a multiple of 8")
		}
		if n > 0 {
			op[i], rp[i] = &o[i][0], &r[i][0]
		}
	}
	if n > 0 {
		winogradInput43AVX2(&op, &rp, n)
	}
}

// WinogradOutput43 writes Aᵀ m, the output transform of F(4x4, 3x3), at every index of the six slices m:
//
//	o0 = (m0 + (m1 + m2)) + (m3 + m4),  o1 = (m1 - m2) + 2·(m3 - m4),
//	o2 = (m1 + m2) + 4·(m3 + m4),  o3 = ((m1 - m2) + m5) + 8·(m3 - m4)
//
// All slices have the length of o[0], a multiple of 8.
func WinogradOutput43(o *[4][]float32, m *[6][]float32) {
	n := len(o[0])
	var op [4]*float32
	var mp [6]*float32
	for i := range m {
		if n%8 != 0 || len(m[i]) != n || i < 4 && len(o[i]) != n {
			panic("vector: WinogradOutput43 needs ten slices of one length, a multiple of 8")
		}
		if n > 0 {
			mp[i] = &m[i][0]
			if i < 4 {
				op[i] = &o[i][0]
			}
		}
	}
	if n > 0 {
		winogradOutput43AVX2(&op, &mp, n)
	}
}

// WinogradFilter43 writes G f, the filter transform of F(4x4, 3x3), of the 3-vectors (a, b, c) at every
// index of the three slices f:
//
//	o0 = a·(1/4),  o1 = ((a + c) + b)·(-1/6),  o2 = ((a + c) - b)·(-1/6),
//	o3 = (a·(1/24) + c·(1/6)) + b·(1/12),  o4 = (a·(1/24) + c·(1/6)) - b·(1/12),  o5 = c
//
// the coefficients rounded to float32. All slices have the length of o[0], a multiple of 8.
func WinogradFilter43(o *[6][]float32, f *[3][]float32) {
	n := len(o[0])
	var op [6]*float32
	var fp [3]*float32
	for i := range o {
		if n%8 != 0 || len(o[i]) != n || i < 3 && len(f[i]) != n {
			panic("vector: WinogradFilter43 needs nine slices of one length, a multiple of 8")
		}
		if n > 0 {
			op[i] = &o[i][0]
			if i < 3 {
				fp[i] = &f[i][0]
			}
		}
	}
	if n > 0 {
		winogradFilter43AVX2(&op, &fp, n)
	}
}

// WinogradColumns43 writes row·B, the column pass of F(4x4, 3x3)'s input transform, for n = len(o[0]) tiles
// of a row (a multiple of 8), tile t covering row[4t .. 4t+5]: o[l][t] is WinogradInput43's o_l of the six
// elements (row needs 4n+8 elements: the last group of 8 tiles reads 4 past its 6th column).
func WinogradColumns43(o *[6][]float32, row []float32) {
	n := len(o[0])
	var op [6]*float32
	for i := range o {
		if n%8 != 0 || len(o[i]) != n {
			panic("vector: WinogradColumns43 needs six slices of one length, a multiple of 8")
		}
		if n > 0 {
			op[i] = &o[i][0]
		}
	}
	if len(row) < 4*n+8 {
		panic("vector: WinogradColumns43 needs a row of 4n+8 elements for n tiles")
	}
	if n > 0 {
		winogradColumns43AVX2(&op, &row[0], n)
	}
}

// WinogradInput43Plane writes Bᵀ d B of the down x across tiles d of one padded plane, 4·down+2 rows of
// width elements (width >= 4·roundUp8(across)+8, a multiple of 8, zero outside the plane), point ξ of tile
// t = ty·across + tx to v[ξ·stride + t]: per row of tiles, WinogradInput43 over its six padded rows (into
// rows, 6·width elements of scratch), then WinogradColumns43 on each result, rounded up to a multiple of 8
// tiles. Each row of tiles thus writes up to 7 tiles past its end, which the caller must either write again
// afterwards or not use.
func WinogradInput43Plane(v []float32, stride int, padded, rows []float32, width, down, across int) {
	n := roundUp8(across)
	if !HasAVX2 || down < 0 || across < 0 || stride < 0 || width%8 != 0 || width < 4*n+8 ||
		len(padded) < (4*down+2)*width || len(rows) < 6*width || len(v) < 35*stride+(down-1)*across+n {
		panic("vector: WinogradInput43Plane needs AVX2 and a padded plane, scratch and points of the sizes it documents")
	}
	if across == 0 {
		return
	}
	var combined, out [6]*float32
	for k := range combined {
		combined[k] = &rows[k*width]
	}
	for ty := 0; ty < down; ty++ {
		var in [6]*float32
		for k := range in {
			in[k] = &padded[(4*ty+k)*width]
		}
		winogradInput43AVX2(&combined, &in, width)
		for k := range combined {
			for l := range out {
				out[l] = &v[(6*k+l)*stride+ty*across]
			}
			winogradColumns43AVX2(&out, combined[k], n)
		}
	}
}

// WinogradOutputInterleave43 writes Aᵀ m as WinogradOutput43, the four results of index i to out[4i ..
// 4i+3]: for the six points of one row of each tile, the tiles' row of output side by side. All slices of m
// have one length n, a multiple of 8, and out at least 4n elements.
func WinogradOutputInterleave43(out []float32, m *[6][]float32) {
	n := len(m[0])
	var mp [6]*float32
	for i := range m {
		if n%8 != 0 || len(m[i]) != n {
			panic("vector: WinogradOutputInterleave43 needs six slices of one length, a multiple of 8")
		}
		if n > 0 {
			mp[i] = &m[i][0]
		}
	}
	if len(out) < 4*n {
		panic("vector: WinogradOutputInterleave43 needs 4n elements of output")
	}
	if n > 0 {
		winogradOutputInterleave43AVX2(&out[0], &mp, n)
	}
}

// WinogradOutputGrad43 writes A t, the adjoint of WinogradOutput43, of the 4-vectors (a, b, c, d) at every
// index of the four slices t:
//
//	o0 = a,  o1 = (a + c) + (b + d),  o2 = (a + c) - (b + d),  o3 = (a + 4·c) + 2·(b + 4·d),
//	o4 = (a + 4·c) - 2·(b + 4·d),  o5 = d
//
// All slices have the length of o[0], a multiple of 8.
func WinogradOutputGrad43(o *[6][]float32, t *[4][]float32) {
	n := len(o[0])
	var op [6]*float32
	var tp [4]*float32
	for i := range o {
		if n%8 != 0 || len(o[i]) != n || i < 4 && len(t[i]) != n {
			panic("vector: WinogradOutputGrad43 needs ten slices of one length, a multiple of 8")
		}
		if n > 0 {
			op[i] = &o[i][0]
			if i < 4 {
				tp[i] = &t[i][0]
			}
		}
	}
	if n > 0 {
		winogradOutputGrad43AVX2(&op, &tp, n)
	}
}

// WinogradGradColumns43 writes WinogradOutputGrad43 of the 4-vectors row[4t .. 4t+3] of n = len(o[0]) tiles
// t (a multiple of 8): the row pass of the output transform's adjoint over a row of output gradients. row
// has at least 4n elements.
func WinogradGradColumns43(o *[6][]float32, row []float32) {
	n := len(o[0])
	var op [6]*float32
	for i := range o {
		if n%8 != 0 || len(o[i]) != n {
			panic("vector: WinogradGradColumns43 needs six slices of one length, a multiple of 8")
		}
		if n > 0 {
			op[i] = &o[i][0]
		}
	}
	if len(row) < 4*n {
		panic("vector: WinogradGradColumns43 needs a row of 4n elements for n tiles")
	}
	if n > 0 {
		winogradGradColumns43AVX2(&op, &row[0], n)
	}
}

// WinogradFilterAdjoint43 writes Gᵀ f, the adjoint of WinogradFilter43, of the 6-vectors f at every index:
//
//	o0 = (f0·(1/4) - (f1 + f2)·(1/6)) + (f3 + f4)·(1/24),  o1 = (f2 - f1)·(1/6) + (f3 - f4)·(1/12),
//	o2 = ((f3 + f4) - (f1 + f2))·(1/6) + f5
//
// the coefficients rounded to float32. All slices have the length of o[0], a multiple of 8.
func WinogradFilterAdjoint43(o *[3][]float32, f *[6][]float32) {
	n := len(o[0])
	var op [3]*float32
	var fp [6]*float32
	for i := range f {
		if n%8 != 0 || len(f[i]) != n || i < 3 && len(o[i]) != n {
			panic("vector: WinogradFilterAdjoint43 needs nine slices of one length, a multiple of 8")
		}
		if n > 0 {
			fp[i] = &f[i][0]
			if i < 3 {
				op[i] = &o[i][0]
			}
		}
	}
	if n > 0 {
		winogradFilterAdjoint43AVX2(&op, &fp, n)
	}
}

//go:noescape
func winogradOutputGrad43AVX2(o *[6]*float32, t *[4]*float32, n int)

//go:noescape
func winogradGradColumns43AVX2(o *[6]*float32, row *float32, n int)

//go:noescape
func winogradFilterAdjoint43AVX2(o *[3]*float32, f *[6]*float32, n int)

//go:noescape
func winogradColumns43AVX2(o *[6]*float32, row *float32, n int)

//go:noescape
func winogradOutputInterleave43AVX2(out *float32, m *[6]*float32, n int)

//go:noescape
func winogradInput43AVX2(o, r *[6]*float32, n int)

//go:noescape
func winogradOutput43AVX2(o *[4]*float32, m *[6]*float32, n int)

//go:noescape
func winogradFilter43AVX2(o *[6]*float32, f *[3]*float32, n int)
