//go:build amd64 && !purego

package vector

import "strconv"

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
// o has 6 slices and the input 6, all of the length of o[0], a multiple of 8.
func WinogradInput43(o, r [][]float32) { combine43(input43, o, r) }

// WinogradOutput43 writes Aᵀ m, the output transform of F(4x4, 3x3), at every index of the six slices m:
//
//	o0 = (m0 + (m1 + m2)) + (m3 + m4),  o1 = (m1 - m2) + 2·(m3 - m4),
//	o2 = (m1 + m2) + 4·(m3 + m4),  o3 = ((m1 - m2) + m5) + 8·(m3 - m4)
//
// o has 4 slices and the input 6, all of the length of o[0], a multiple of 8.
func WinogradOutput43(o, m [][]float32) { combine43(output43, o, m) }

// WinogradFilter43 writes G f, the filter transform of F(4x4, 3x3), of the 3-vectors (a, b, c) at every
// index of the three slices f:
//
//	o0 = a·(1/4),  o1 = ((a + c) + b)·(-1/6),  o2 = ((a + c) - b)·(-1/6),
//	o3 = (a·(1/24) + c·(1/6)) + b·(1/12),  o4 = (a·(1/24) + c·(1/6)) - b·(1/12),  o5 = c
//
// the coefficients rounded to float32. o has 6 slices and the input 3, all of the length of o[0], a multiple of 8.
func WinogradFilter43(o, f [][]float32) { combine43(filter43, o, f) }

// WinogradOutputGrad43 writes A t, the adjoint of WinogradOutput43, of the 4-vectors (a, b, c, d) at every
// index of the four slices t:
//
//	o0 = a,  o1 = (a + c) + (b + d),  o2 = (a + c) - (b + d),  o3 = (a + 4·c) + 2·(b + 4·d),
//	o4 = (a + 4·c) - 2·(b + 4·d),  o5 = d
//
// o has 6 slices and the input 4, all of the length of o[0], a multiple of 8.
func WinogradOutputGrad43(o, t [][]float32) { combine43(outputGrad43, o, t) }

// WinogradFilterAdjoint43 writes Gᵀ f, the adjoint of WinogradFilter43, of the 6-vectors f at every index:
//
//	o0 = (f0·(1/4) - (f1 + f2)·(1/6)) + (f3 + f4)·(1/24),  o1 = (f2 - f1)·(1/6) + (f3 - f4)·(1/12),
//	o2 = ((f3 + f4) - (f1 + f2))·(1/6) + f5
//
// the coefficients rounded to float32. o has 3 slices and the input 6, all of the length of o[0], a multiple of 8.
func WinogradFilterAdjoint43(o, f [][]float32) { combine43(filterAdjoint43, o, f) }

// kernel43 names an element-wise kernel of F(4x4, 3x3).
type kernel43 int

const (
	input43 kernel43 = iota
	output43
	filter43
	outputGrad43
	filterAdjoint43
)

// shapes43 holds each kernel's name and numbers of output and input slices.
var shapes43 = [...]struct {
	name      string
	outs, ins int
}{{"WinogradInput43", 6, 6}, {"WinogradOutput43", 4, 6}, {"WinogradFilter43", 6, 3},
	{"WinogradOutputGrad43", 6, 4}, {"WinogradFilterAdjoint43", 3, 6}}

// combine43 checks the slices of kernel k and runs it. The slices' addresses go to the kernel in one array
// on the stack, outputs first; a direct call per kernel, not a function value, keeps it there.
func combine43(k kernel43, o, in [][]float32) {
	shape, n := shapes43[k], len(o[0])
	if len(o) != shape.outs || len(in) != shape.ins {
		panic("vector: " + shape.name + " needs " + strconv.Itoa(shape.outs) + " output and " +
			strconv.Itoa(shape.ins) + " input slices")
	}
	var p [12]*float32
	for i := range shape.outs + shape.ins {
		s := in[max(i-shape.outs, 0)]
		if i < shape.outs {
			s = o[i]
		}
		if n%8 != 0 || len(s) != n {
			panic("vector: " + shape.name + " needs slices of one length, a multiple of 8")
		}
		if n > 0 {
			p[i] = &s[0]
		}
	}
	if n == 0 {
		return
	}
	out, args := &p[0], &p[shape.outs]
	switch k {
	case input43:
		winogradInput43AVX2(out, args, n)
	case output43:
		winogradOutput43AVX2(out, args, n)
	case filter43:
		winogradFilter43AVX2(out, args, n)
	case outputGrad43:
		winogradOutputGrad43AVX2(out, args, n)
	case filterAdjoint43:
		winogradFilterAdjoint43AVX2(out, args, n)
	}
}

// WinogradColumns43 writes row·B, the column pass of F(4x4, 3x3)'s input transform, for n = len(o[0]) tiles
// of a row (a multiple of 8), tile t covering row[4t .. 4t+5]: o[l][t] is WinogradInput43's o_l of the six
// elements (row needs 4n+8 elements: the last group of 8 tiles reads 4 past its 6th column).
func WinogradColumns43(o [][]float32, row []float32) {
	rowPass43(false, o, row)
}

// WinogradGradColumns43 writes WinogradOutputGrad43 of the 4-vectors row[4t .. 4t+3] of n = len(o[0]) tiles
// t (a multiple of 8): the row pass of the output transform's adjoint over a row of output gradients. row
// has at least 4n elements.
func WinogradGradColumns43(o [][]float32, row []float32) {
	rowPass43(true, o, row)
}

// rowPass43 checks the six output slices and the row of WinogradColumns43, or with grad of
// WinogradGradColumns43, and runs its kernel.
func rowPass43(grad bool, o [][]float32, row []float32) {
	n := len(o[0])
	name, need := "WinogradColumns43", 4*n+8
	if grad {
		name, need = "WinogradGradColumns43", 4*n
	}
	var p [6]*float32
	if len(o) != 6 || len(row) < need {
		panic("vector: " + name + " needs six output slices and a row of the length it documents")
	}
	for i, s := range o {
		if n%8 != 0 || len(s) != n {
			panic("vector: " + name + " needs six slices of one length, a multiple of 8")
		}
		if n > 0 {
			p[i] = &s[0]
		}
	}
	switch {
	case n == 0:
	case grad:
		winogradGradColumns43AVX2(&p[0], &row[0], n)
	default:
		winogradColumns43AVX2(&p[0], &row[0], n)
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
	var combined, in, out [6]*float32
	for k := range combined {
		combined[k] = &rows[k*width]
	}
	for ty := 0; ty < down; ty++ {
		for k := range in {
			in[k] = &padded[(4*ty+k)*width]
		}
		winogradInput43AVX2(&combined[0], &in[0], width)
		for k := range combined {
			for l := range out {
				out[l] = &v[(6*k+l)*stride+ty*across]
			}
			winogradColumns43AVX2(&out[0], combined[k], n)
		}
	}
}

// WinogradOutputInterleave43 writes Aᵀ m as WinogradOutput43, the four results of index i to out[4i ..
// 4i+3]: for the six points of one row of each tile, the tiles' row of output side by side. All slices of m
// have one length n, a multiple of 8, and out at least 4n elements.
func WinogradOutputInterleave43(out []float32, m [][]float32) {
	n := len(m[0])
	var p [6]*float32
	if len(m) != 6 || len(out) < 4*n {
		panic("vector: WinogradOutputInterleave43 needs six input slices and 4n elements of output")
	}
	for i, s := range m {
		if n%8 != 0 || len(s) != n {
			panic("vector: WinogradOutputInterleave43 needs six slices of one length, a multiple of 8")
		}
		if n > 0 {
			p[i] = &s[0]
		}
	}
	if n > 0 {
		winogradOutputInterleave43AVX2(&out[0], &p[0], n)
	}
}

//go:noescape
func winogradInput43AVX2(o, r **float32, n int)

//go:noescape
func winogradOutput43AVX2(o, m **float32, n int)

//go:noescape
func winogradFilter43AVX2(o, f **float32, n int)

//go:noescape
func winogradOutputGrad43AVX2(o, t **float32, n int)

//go:noescape
func winogradFilterAdjoint43AVX2(o, f **float32, n int)

//go:noescape
func winogradColumns43AVX2(o **float32, row *float32, n int)

//go:noescape
func winogradGradColumns43AVX2(o **float32, row *float32, n int)

//go:noescape
func winogradOutputInterleave43AVX2(out *float32, m **float32, n int)
