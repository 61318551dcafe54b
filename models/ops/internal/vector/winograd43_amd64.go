//go:build amd64 && !purego

package vector

import "strconv"

// The passes of Winograd's F(4x4, 3x3) (Lavin and Gray, 2016) as element-wise combinations of whole
// slices: each output slice is a fixed linear combination of the input slices at the same index, so that
// one call transforms a row of tiles, or one point of every tile, eight lanes at a time. Package ops holds
// the same combinations in Go (input43 and its siblings), factored the same way, for float64, for
// other processors and for the remainder of a length that is not a multiple of 8; here each multiply-add is
// fused.

// Combine43 runs kernel k on the slices o (its outputs) and in (its inputs), all of the length of o[0], a
// multiple of 8. The slices' addresses go to the kernel in one array on the stack, outputs first; a direct
// call per kernel, not a function value, keeps it there and the slices' headers on the caller's stack.
func Combine43(k Kernel43, o, in [][]float32) {
	shape, n := shapes43[k], len(o[0])
	if len(o) != shape.outs || len(in) != shape.ins {
		panic("vector: " + shape.name + " needs " + strconv.Itoa(shape.outs) + " output and " +
			strconv.Itoa(shape.ins) + " input slices")
	}
	for i := range shape.outs + shape.ins {
		if s := slice43(i, shape.outs, o, in); n%8 != 0 || len(s) != n {
			panic("vector: " + shape.name + " needs slices of one length, a multiple of 8")
		}
	}
	if n == 0 {
		return
	}
	// The AVX-512 kernels take multiples of 16; the AVX2 one runs the last 8 of a length that is not.
	var p [12]*float32
	from := 0
	if HasAVX512 && n >= 16 {
		for i := range shape.outs + shape.ins {
			p[i] = &slice43(i, shape.outs, o, in)[0]
		}
		from = n &^ 15
		run43(k, true, &p[0], &p[shape.outs], from)
	}
	if from == n {
		return
	}
	for i := range shape.outs + shape.ins {
		p[i] = &slice43(i, shape.outs, o, in)[from]
	}
	run43(k, false, &p[0], &p[shape.outs], n-from)
}

// slice43 returns slice i of a kernel's arguments, outputs o first, then inputs in.
func slice43(i, outs int, o, in [][]float32) []float32 {
	if i < outs {
		return o[i]
	}
	return in[i-outs]
}

// run43 runs kernel k on n elements of the slices whose addresses out and args point to, with the
// AVX-512 version when avx512 is set (n a multiple of 16), else the AVX2 one (n a multiple of 8).
func run43(k Kernel43, avx512 bool, out, args **float32, n int) {
	switch {
	case k == Input43 && avx512:
		winogradInput43AVX512(out, args, n)
	case k == Input43:
		winogradInput43AVX2(out, args, n)
	case k == Output43 && avx512:
		winogradOutput43AVX512(out, args, n)
	case k == Output43:
		winogradOutput43AVX2(out, args, n)
	case k == Filter43 && avx512:
		winogradFilter43AVX512(out, args, n)
	case k == Filter43:
		winogradFilter43AVX2(out, args, n)
	case k == OutputGrad43 && avx512:
		winogradOutputGrad43AVX512(out, args, n)
	case k == OutputGrad43:
		winogradOutputGrad43AVX2(out, args, n)
	case k == FilterAdjoint43 && avx512:
		winogradFilterAdjoint43AVX512(out, args, n)
	case k == FilterAdjoint43:
		winogradFilterAdjoint43AVX2(out, args, n)
	}
}

// WinogradColumns43 writes row·B, the column pass of F(4x4, 3x3)'s input transform, for n = len(o[0]) tiles
// of a row (a multiple of 8), tile t covering row[4t .. 4t+5]: o[l][t] is Input43's o_l of the six
// elements (row needs 4n+8 elements: the last group of 8 tiles reads 4 past its 6th column).
func WinogradColumns43(o [][]float32, row []float32) {
	rowPass43(false, o, row)
}

// WinogradGradColumns43 writes OutputGrad43 of the 4-vectors row[4t .. 4t+3] of n = len(o[0]) tiles
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
// t = ty·across + tx to v[ξ·stride + t]: per row of tiles, Input43 over its six padded rows (into
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
	// Input43 runs on whole padded rows: with AVX-512 on the multiple of 16 elements they start with, and
	// with AVX2 on the last 8 of a width that is not a multiple of 16.
	wide := 0
	if HasAVX512 {
		wide = width &^ 15
	}
	var combined, in, out [6]*float32
	rowsFrom := func(ty, from int) {
		for k := range in {
			combined[k], in[k] = &rows[k*width+from], &padded[(4*ty+k)*width+from]
		}
	}
	for ty := 0; ty < down; ty++ {
		if wide > 0 {
			rowsFrom(ty, 0)
			winogradInput43AVX512(&combined[0], &in[0], wide)
		}
		if wide < width {
			rowsFrom(ty, wide)
			winogradInput43AVX2(&combined[0], &in[0], width-wide)
		}
		for k := range combined {
			combined[k] = &rows[k*width]
		}
		for k := range combined {
			for l := range out {
				out[l] = &v[(6*k+l)*stride+ty*across]
			}
			winogradColumns43AVX2(&out[0], combined[k], n)
		}
	}
}

// WinogradOutputInterleave43 writes Aᵀ m as Output43, the four results of index i to out[4i ..
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

//go:noescape
func winogradInput43AVX512(o, r **float32, n int)

//go:noescape
func winogradOutput43AVX512(o, m **float32, n int)

//go:noescape
func winogradFilter43AVX512(o, f **float32, n int)

//go:noescape
func winogradOutputGrad43AVX512(o, t **float32, n int)

//go:noescape
func winogradFilterAdjoint43AVX512(o, f **float32, n int)
