package ops

import "github.com/bicyc/bicyc/models/ops/internal/vector"

// Winograd's F(4x4, 3x3) computes a 4x4 tile of a 3x3 convolution's output from the 6x6 tile of input
// around it, Y = Aᵀ [ (G g Gᵀ) ⊙ (Bᵀ d B) ] A, with
//
//	Bᵀ = | 4  0 -5  0  1  0 |    G = |  1/4     0     0  |    Aᵀ = | 1  1  1  1  1  0 |
//	     | 0 -4 -4  1  1  0 |        | -1/6  -1/6  -1/6  |         | 0  1 -1  2 -2  0 |
//	     | 0  4 -4 -1  1  0 |        | -1/6   1/6  -1/6  |         | 0  1  1  4  4  0 |
//	     | 0 -2 -1  2  1  0 |        |  1/24  1/12  1/6  |         | 0  1 -1  8 -8  1 |
//	     | 0  2 -1 -2  1  0 |        |  1/24 -1/12  1/6  |
//	     | 0  4  0 -5  0  1 |        |  0     0     1    |
//
// 36 products [O, C]·[C, tiles] for 16 outputs per tile: 4 times fewer multiplications than im2col where
// F(2x2, 3x3) saves 2.25, and 36/16 = 2.25 transformed values per output instead of 4, so the transforms
// move less memory too. The forward convolution and the input gradient use it on the planes where it is
// faster (convGeom.winograd43), the filter gradient on the larger of them (winograd43FilterGradient). Its coefficients reach 8 and 1/24, so float32 results differ from im2col's by about ten
// times F(2x2, 3x3)'s rounding (TestWinogradMatchesIm2col measures both), as in the libraries that train
// with it (oneDNN's AVX-512 Winograd convolution is F(4x4, 3x3)).
//
// Every pass is an element-wise combination of whole slices (vector.Input43 and its siblings): the
// input plane is stored split by column phase (column 4m+p of the padded plane at [p][m]), so that the six
// columns of tile t, 4t..4t+5, are elements t of the four phases and t+1 of the first two; the outputs are
// computed point by point over all tiles and interleaved into the output plane at the end.

// winograd43Points is the number of transformed points of an F(4x4, 3x3) tile, 6x6.
const winograd43Points = 36

// winograd43ChunkColumns is the number of output positions a chunk of images aims for in an F(4x4, 3x3)
// convolution: 128 tiles of 16 outputs, the products' width of an F(2x2, 3x3) chunk.
const winograd43ChunkColumns = 2048

// winograd43 reports a convolution with g.winograd() whose forward pass and input gradient use F(4x4, 3x3):
// output sides that are multiples of 4, from 8. BenchmarkConv2d3x3 (CPU time per pass, F(2x2, 3x3) ->
// F(4x4, 3x3), on the loaded shared 2-core Xeon, batch 64): forward 40.6 -> 23.1 ms at 64 channels 32x32,
// 34.9 -> 24.4 at 128 channels 16x16, 38.4 -> 34.0 at 256 channels 8x8, input gradients alike; at 512
// channels 4x4, one tile per plane, it lost (32.6 -> 45.4: the transformed filters, 2.25 times larger, are
// read for as few columns as there are images), and on the sides that overhang its tiles, 14 and 7 (the
// default backbone's), it was no faster: a quarter of its tiles' outputs are discarded there.
func (g convGeom) winograd43() bool {
	return g.winograd() && g.oh%4 == 0 && g.ow%4 == 0 && min(g.oh, g.ow) >= 8
}

// winograd43FilterGradient reports a convolution whose filter gradient uses F(4x4, 3x3): g.winograd43() on
// sides from 16. BenchmarkConv2d3x3, CPU time F(2x2, 3x3) -> F(4x4, 3x3) on the loaded shared 2-core Xeon:
// 41.6 -> 34.5 ms at 64 channels 32x32 batch 64, 37.9 -> 27.6 at 64 channels 56x56 batch 16, 31.5 -> 29.1 at
// 128 channels 16x16 batch 64, but 30.9 -> 35.9 at 256 channels 8x8: with two tiles across, the adjoint's
// pass over each row of the output gradient does a quarter of its vector width's work.
func (g convGeom) winograd43FilterGradient() bool { return g.winograd43() && min(g.oh, g.ow) >= 16 }

// tiles43 returns the number of 4x4 output tiles of one image, down and across; the last ones overhang an
// output size that is not a multiple of 4.
func (g convGeom) tiles43() (down, across int) { return (g.oh + 3) / 4, (g.ow + 3) / 4 }

// winograd43Forward computes y = Conv2d(x, w) by F(4x4, 3x3).
func winograd43Forward[T float](g convGeom, x, w, y []T) {
	pool := scratchOf[T]()
	u := pool.get(winograd43Points * (g.o*g.c + winogradSkew))
	defer pool.put(u)
	winograd43Filters(w, u, g.o, g.c, false)
	winograd43Conv(g, x, u, y, false)
}

// winograd43InputGrad computes dx from dy by F(4x4, 3x3), as the convolution of dy with the filters rotated
// by 180° and their channels swapped (see winogradInputGrad).
func winograd43InputGrad[T float](g convGeom, w, dy, dx []T) {
	pool := scratchOf[T]()
	u := pool.get(winograd43Points * (g.o*g.c + winogradSkew))
	defer pool.put(u)
	winograd43Filters(w, u, g.o, g.c, true)
	winograd43Conv(g.transposed(), dy, u, dx, true)
}

// winograd43Filters writes U[ξ] = (G w[o,c] Gᵀ)[ξ] of w [o,c,3,3] to u as 36 matrices [o, c],
// o·c+winogradSkew elements apart; with flip, of the filters rotated by 180°. It works through blocks of
// filterBlock43 filters, each first laid out element by element (element e of filter k at e·block+k), so
// that both passes of G run over the whole block at once from the first-level cache and the second writes
// each point's stretch of the block in order. Without blocks, the passes streamed all of the filters through
// memory three times: at 512x512 channels, a quarter of the forward convolution's time.
func winograd43Filters[T float](w, u []T, o, c int, flip bool) {
	n := o * c
	stride := n + winogradSkew
	pool := scratchOf[T]()
	parallelEach((n+filterBlock43-1)/filterBlock43, Threads(), func() (func(int), func()) {
		local := pool.get(27 * filterBlock43)
		return func(b int) {
			k0, k1 := b*filterBlock43, min((b+1)*filterBlock43, n)
			nb := k1 - k0
			f, gf := local[:9*nb], local[9*nb:27*nb] // the filters' elements, then G f: (r, j) at (3r+j)·nb
			for k := k0; k < k1; k++ {
				filter := w[9*k : 9*k+9]
				for e := range 9 {
					src := e
					if flip {
						src = 8 - e
					}
					f[e*nb+k-k0] = filter[src]
				}
			}
			for j := range 3 { // column j of each filter, (f[j], f[3+j], f[6+j]), gives column j of G f
				var out [6][]T
				for r := range out {
					out[r] = gf[(3*r+j)*nb : (3*r+j+1)*nb]
				}
				filter43(&out, &[3][]T{f[j*nb : (j+1)*nb], f[(3+j)*nb : (4+j)*nb], f[(6+j)*nb : (7+j)*nb]})
			}
			for r := range 6 { // row r of G f gives points 6r..6r+5
				var out [6][]T
				for l := range out {
					out[l] = u[(6*r+l)*stride+k0 : (6*r+l)*stride+k1]
				}
				filter43(&out, &[3][]T{gf[3*r*nb : (3*r+1)*nb], gf[(3*r+1)*nb : (3*r+2)*nb], gf[(3*r+2)*nb : (3*r+3)*nb]})
			}
		}, func() { pool.put(local) }
	})
}

// filterBlock43 is the number of filters winograd43Filters transforms together: its 27 values per filter
// of scratch, 27 KB, stay in the first-level cache.
const filterBlock43 = 256

// winograd43Conv computes y [N,O,H,W] from x [N,C,H,W] and the transformed filters u, 36 matrices [O, C], or
// [C, O] to be transposed if transposedFilters, O·C+winogradSkew elements apart, chunk by chunk as
// winogradConv does.
func winograd43Conv[T float](g convGeom, x, u, y []T, transposedFilters bool) {
	lda := g.c
	if transposedFilters {
		lda = g.o
	}
	down, across := g.tiles43()
	perImage := down * across
	ch := g.chunkingFor(winograd43ChunkColumns)
	pool := scratchOf[T]()
	width := paddedWidth43(across)
	parallelEach(ch.chunks, ch.workers, func() (func(int), func()) {
		most := ch.images * perImage
		v, m := pool.get(winograd43Points*(g.c*most+winogradSkew)), pool.get(winograd43Points*(g.o*most+winogradSkew))
		padded, rows := pool.get((4*down+2)*width+8), pool.get(6*width)
		clear(padded)
		return func(i int) {
			first, count := ch.span(g, i)
			tiles := count * perImage
			vs, ms := g.c*tiles+winogradSkew, g.o*tiles+winogradSkew
			winograd43Inputs(g, x, v, padded, rows, first, count, vs)
			for xi := range winograd43Points {
				gemm(ch.gemmThreads, transposedFilters, false, g.o, tiles, g.c, u[xi*(g.o*g.c+winogradSkew):], lda,
					v[xi*vs:], tiles, 0, m[xi*ms:], tiles)
			}
			winograd43Outputs(g, m, y, first, count, ms)
		}, func() { pool.put(v, m, padded, rows) }
	})
}

// paddedWidth43 returns the row length of winograd43Inputs' padded planes for across tiles: the 4·across+2
// columns tiles read, rounded up so that the vector kernels may compute whole groups of 8 tiles and read 4
// columns past the last group (vector.WinogradColumns43).
func paddedWidth43(across int) int { return 4*roundUp8(across) + 8 }

// roundUp8 returns n rounded up to a multiple of 8, the vector kernels' width.
func roundUp8(n int) int { return (n + 7) &^ 7 }

// winograd43Inputs writes the transformed input tiles V[ξ] [C, tiles] of images first..first+count-1 of x
// to v, point ξ at v[ξ·stride:], tile t = (i·down + ty)·across + tx of image first+i covering input rows
// 4ty-1..4ty+4 and columns 4tx-1..4tx+4. Each plane is first copied into padded, 4·down+2 rows of
// paddedWidth43 elements, which the caller has zeroed and the copies never write outside the plane; then per
// row of tiles, Bᵀ over its six padded rows into rows, and B over the six columns of each tile. In float32
// with the vector kernels a row of tiles is rounded up to a multiple of 8 tiles: the 7 tiles it may write
// past its end belong to later rows, images or channels, written afterwards, or, past the last channel, to
// the skew after each point's matrix.
func winograd43Inputs[T float](g convGeom, x, v, padded, rows []T, first, count, stride int) {
	down, across := g.tiles43()
	perImage, tiles, hw := down*across, count*down*across, g.h*g.w
	width := paddedWidth43(across)
	v32, vectorised := any(v).([]float32)
	vectorised = vectorised && vector.HasAVX2
	for c := 0; c < g.c; c++ {
		for i := 0; i < count; i++ {
			plane := x[((first+i)*g.c+c)*hw : ((first+i)*g.c+c+1)*hw]
			for r := 0; r < g.h; r++ {
				copyRow(padded[(r+1)*width+1:], plane[r*g.w:(r+1)*g.w])
			}
			at := c*tiles + i*perImage
			if vectorised {
				vector.WinogradInput43Plane(v32[at:], stride, any(padded).([]float32), any(rows).([]float32), width, down, across)
				continue
			}
			inputPlane43(v[at:], stride, padded, rows, width, down, across)
		}
	}
}

// inputPlane43 is vector.WinogradInput43Plane in Go, without rounding rows of tiles up.
func inputPlane43[T float](v []T, stride int, padded, rows []T, width, down, across int) {
	var combined [6][]T
	for k := range combined {
		combined[k] = rows[k*width : (k+1)*width]
	}
	for ty := 0; ty < down; ty++ {
		var in [6][]T
		for k := range in {
			in[k] = padded[(4*ty+k)*width : (4*ty+k+1)*width]
		}
		input43(&combined, &in)
		for k, row := range combined {
			for tx := 0; tx < across; tx++ {
				q := row[4*tx : 4*tx+6 : 4*tx+6]
				var o [6][]T
				for l := range o {
					o[l] = v[(6*k+l)*stride+ty*across+tx:][:1]
				}
				input43(&o, &[6][]T{q[0:1], q[1:2], q[2:3], q[3:4], q[4:5], q[5:6]})
			}
		}
	}
}

// winograd43Outputs writes images first..first+count-1 of y from the products M[ξ] [O, tiles] in m, point ξ
// at m[ξ·stride:], one output channel at a time: Aᵀ over the six row points of all tiles, then A over the
// six column points, each tile's four outputs of a row stored side by side, so that the rows of tiles lie
// as the rows of the output planes, which are copied to y.
func winograd43Outputs[T float](g convGeom, m, y []T, first, count, stride int) {
	down, across := g.tiles43()
	perImage, tiles, p := down*across, count*down*across, g.outPlane()
	_, vectorised := any(m).([]float32)
	vectorised = vectorised && vector.HasAVX2
	n := tiles
	if vectorised {
		n = roundUp8(tiles) // m has the skew to read past the last channel's tiles
	}
	pool := scratchOf[T]()
	buf := pool.get(40 * n)
	defer pool.put(buf)
	rowsA, rowsOut := buf[:24*n], buf[24*n:] // Aᵀ M: (r, l) at (6r+l)·n; output row r of the tiles at 4r·n
	for o := 0; o < g.o; o++ {
		for l := range 6 {
			var in [6][]T
			for k := range in {
				in[k] = m[(6*k+l)*stride+o*tiles:][:n]
			}
			output43(&[4][]T{rowsA[l*n : (l+1)*n], rowsA[(6+l)*n : (7+l)*n], rowsA[(12+l)*n : (13+l)*n],
				rowsA[(18+l)*n : (19+l)*n]}, &in)
		}
		for r := range 4 {
			var in [6][]T
			for l := range in {
				in[l] = rowsA[(6*r+l)*n : (6*r+l+1)*n]
			}
			out := rowsOut[4*r*n : 4*(r+1)*n]
			if vectorised {
				vector.WinogradOutputInterleave43(any(out).([]float32), any(in[:]).([][]float32))
				continue
			}
			for t := 0; t < n; t++ {
				output43(&[4][]T{out[4*t : 4*t+1], out[4*t+1 : 4*t+2], out[4*t+2 : 4*t+3], out[4*t+3 : 4*t+4]},
					&[6][]T{in[0][t : t+1], in[1][t : t+1], in[2][t : t+1], in[3][t : t+1], in[4][t : t+1], in[5][t : t+1]})
			}
		}
		for i := 0; i < count; i++ {
			plane := y[((first+i)*g.o+o)*p : ((first+i)*g.o+o+1)*p]
			for oy := 0; oy < g.oh; oy++ {
				from := 4 * (oy%4*n + i*perImage + oy/4*across)
				copyRow(plane[oy*g.ow:(oy+1)*g.ow], rowsOut[from:from+g.ow])
			}
		}
	}
}

// input43 writes Bᵀ r at every index of the slices, as vector.Input43 (which runs the multiples of 8
// of float32 where it can).
func input43[T float](o, r *[6][]T) {
	n, from := len(o[0]), vectorPrefix(vector.Input43, o[:], r[:])
	r0, r1, r2, r3, r4, r5 := r[0][:n], r[1][:n], r[2][:n], r[3][:n], r[4][:n], r[5][:n]
	o0, o1, o2, o3, o4, o5 := o[0][:n], o[1][:n], o[2][:n], o[3][:n], o[4][:n], o[5][:n]
	for i := from; i < n; i++ {
		a, b, c, d, e, f := r0[i], r1[i], r2[i], r3[i], r4[i], r5[i]
		o0[i] = (e + 4*a) - 5*c
		o1[i] = (d + e) - 4*(b+c)
		o2[i] = (e - d) + 4*(b-c)
		o3[i] = (e - c) - 2*(b-d)
		o4[i] = (e - c) + 2*(b-d)
		o5[i] = (f + 4*b) - 5*d
	}
}

// output43 writes Aᵀ m at every index of the slices, as vector.Output43.
func output43[T float](o *[4][]T, m *[6][]T) {
	n, from := len(o[0]), vectorPrefix(vector.Output43, o[:], m[:])
	m0, m1, m2, m3, m4, m5 := m[0][:n], m[1][:n], m[2][:n], m[3][:n], m[4][:n], m[5][:n]
	o0, o1, o2, o3 := o[0][:n], o[1][:n], o[2][:n], o[3][:n]
	for i := from; i < n; i++ {
		s12, d12, s34, d34 := m1[i]+m2[i], m1[i]-m2[i], m3[i]+m4[i], m3[i]-m4[i]
		o0[i] = (m0[i] + s12) + s34
		o1[i] = d12 + 2*d34
		o2[i] = s12 + 4*s34
		o3[i] = (d12 + m5[i]) + 8*d34
	}
}

// filter43 writes G f of the 3-vectors at every index of the slices, as vector.Filter43, with the
// coefficients rounded to T.
func filter43[T float](o *[6][]T, f *[3][]T) {
	n, from := len(o[0]), vectorPrefix(vector.Filter43, o[:], f[:])
	quarter, sixth, twelfth, twentyFourth := T(1)/4, T(1)/6, T(1)/12, T(1)/24
	a, b, c := f[0][:n], f[1][:n], f[2][:n]
	o0, o1, o2, o3, o4, o5 := o[0][:n], o[1][:n], o[2][:n], o[3][:n], o[4][:n], o[5][:n]
	for i := from; i < n; i++ {
		s, p := a[i]+c[i], a[i]*twentyFourth+c[i]*sixth
		o0[i] = a[i] * quarter
		o1[i] = (s + b[i]) * -sixth
		o2[i] = (s - b[i]) * -sixth
		o3[i] = p + b[i]*twelfth
		o4[i] = p - b[i]*twelfth
		o5[i] = c[i]
	}
}

// winograd43FilterGrad computes dw [O,C,3,3] from x and dy by F(4x4, 3x3), as the adjoint of
// winograd43Forward in w,
//
//	dw[o,c] = Gᵀ [ Σ_tiles (A dy_tile Aᵀ) ⊙ (Bᵀ d_tile B) ] G
//
// summed over the 4x4 tiles of dy[n,o] and the 6x6 tiles of x[n,c] they depend on: one product
// [O, tiles] · [tiles, C] per point and chunk, into partial sums per goroutine (filterGradSums).
func winograd43FilterGrad[T float](g convGeom, x, dy, dw []T) {
	down, across := g.tiles43()
	filterGradSums(g, g.chunkingFor(winograd43ChunkColumns), down*across, winograd43Points,
		func(ch convChunks, partial []T, lo, hi int) {
			winograd43FilterGradChunks(g, ch, x, dy, partial, lo, hi)
		},
		func(sums [][]T, stride int) { winograd43FilterAdjoints(sums, dw, g.o*g.c, stride) })
}

// winograd43FilterGradChunks writes to partial the sums over chunks lo..hi-1 of the products
// (A dy Aᵀ)[ξ] [O, tiles] · (Bᵀ x B)[ξ]ᵀ [tiles, C], 36 matrices [O, C] O·C+winogradSkew elements apart.
func winograd43FilterGradChunks[T float](g convGeom, ch convChunks, x, dy, partial []T, lo, hi int) {
	down, across := g.tiles43()
	perImage := down * across
	most := ch.images * perImage
	width := paddedWidth43(across)
	pool := scratchOf[T]()
	v, m := pool.get(winograd43Points*(g.c*most+winogradSkew)), pool.get(winograd43Points*(g.o*most+winogradSkew))
	padded, rows := pool.get((4*down+2)*width+8), pool.get(6*width)
	defer pool.put(v, m, padded, rows)
	clear(padded)
	stride := g.o*g.c + winogradSkew
	for i := lo; i < hi; i++ {
		first, count := ch.span(g, i)
		tiles := count * perImage
		vs, ms := g.c*tiles+winogradSkew, g.o*tiles+winogradSkew
		sideBySide(ch.gemmThreads,
			func() { winograd43Inputs(g, x, v, padded, rows, first, count, vs) },
			func() { winograd43OutputGrads(g, dy, m, first, count, ms) })
		var beta T
		if i > lo {
			beta = 1
		}
		for xi := range winograd43Points {
			gemm(ch.gemmThreads, false, true, g.o, g.c, tiles, m[xi*ms:], tiles, v[xi*vs:], tiles,
				beta, partial[xi*stride:], g.c)
		}
	}
}

// winograd43OutputGrads writes A dy Aᵀ, the adjoint of the output transform, of every 4x4 tile of dy of
// images first..first+count-1 to m, point ξ of tile t of output channel o at m[ξ·stride + o·tiles + t], tiles
// numbered as in winograd43Inputs, a channel at a time: A over the four values of each tile in each row of
// dy (copied into a zero-padded row), then A over the four rows of each tile, for all tiles at once. In
// float32 with the vector kernels a row of tiles is rounded up to a multiple of 8 tiles, into slack after
// each row of the scratch, and the second pass to a multiple of 8 tiles, into the next channel's tiles of
// m, written afterwards, or the skew after each point's matrix.
func winograd43OutputGrads[T float](g convGeom, dy, m []T, first, count, stride int) {
	down, across := g.tiles43()
	perImage, tiles, p := down*across, count*down*across, g.outPlane()
	_, vectorised := any(m).([]float32)
	vectorised = vectorised && vector.HasAVX2
	n, rowTiles := tiles, across
	if vectorised {
		n, rowTiles = roundUp8(tiles), roundUp8(across)
	}
	hs := n + 8 // one row of A·dy per point: room for the last row of tiles, rounded up
	pool := scratchOf[T]()
	buf := pool.get(24*hs + 4*rowTiles)
	defer pool.put(buf)
	h, row := buf[:24*hs], buf[24*hs:] // A·dy rows: (r, l) at (6r+l)·hs; one row of dy, zeros past the plane
	clear(row)
	for o := 0; o < g.o; o++ {
		for i := 0; i < count; i++ {
			plane := dy[((first+i)*g.o+o)*p : ((first+i)*g.o+o+1)*p]
			for oy := 0; oy < 4*down; oy++ {
				if oy < g.oh {
					copyRow(row, plane[oy*g.ow:(oy+1)*g.ow])
				} else {
					clear(row[:g.ow])
				}
				r, at := oy%4, i*perImage+oy/4*across
				var out [6][]T
				for l := range out {
					out[l] = h[(6*r+l)*hs+at : (6*r+l)*hs+at+rowTiles]
				}
				gradColumns43(&out, row)
			}
		}
		for l := range 6 {
			var out [6][]T
			for k := range out {
				out[k] = m[(6*k+l)*stride+o*tiles:][:n]
			}
			outputGrad43(&out, &[4][]T{h[l*hs:][:n], h[(6+l)*hs:][:n], h[(12+l)*hs:][:n], h[(18+l)*hs:][:n]})
		}
	}
}

// winograd43FilterAdjoints writes dw from the partial sums, point ξ of filter k at s[ξ·stride + k]: the
// partials added into the first, in goroutine order, then Gᵀ f G of each filter, block by block of
// filterBlock43 filters as winograd43Filters, the results laid out by element and then interleaved into dw.
func winograd43FilterAdjoints[T float](sums [][]T, dw []T, n, stride int) {
	p := sums[0]
	pool := scratchOf[T]()
	parallelEach((n+filterBlock43-1)/filterBlock43, Threads(), func() (func(int), func()) {
		local := pool.get(27 * filterBlock43)
		return func(b int) {
			k0, k1 := b*filterBlock43, min((b+1)*filterBlock43, n)
			nb := k1 - k0
			for _, s := range sums[1:] {
				for xi := range winograd43Points {
					at := xi*stride + k0
					addTo(p[at:at+nb], s[at:at+nb])
				}
			}
			gf, d := local[:18*nb], local[18*nb:27*nb] // Gᵀ f: (i, l) at (6i+l)·nb; the gradients' elements
			for l := range 6 {                         // column l of the points gives column l of Gᵀ f
				var in [6][]T
				for k := range in {
					in[k] = p[(6*k+l)*stride+k0:][:nb]
				}
				filterAdjoint43(&[3][]T{gf[l*nb:][:nb], gf[(6+l)*nb:][:nb], gf[(12+l)*nb:][:nb]}, &in)
			}
			for i := range 3 { // row i of Gᵀ f gives elements 3i..3i+2
				var in [6][]T
				for l := range in {
					in[l] = gf[(6*i+l)*nb:][:nb]
				}
				filterAdjoint43(&[3][]T{d[3*i*nb:][:nb], d[(3*i+1)*nb:][:nb], d[(3*i+2)*nb:][:nb]}, &in)
			}
			for k := range nb {
				for e := range 9 {
					dw[9*(k0+k)+e] = d[e*nb+k]
				}
			}
		}, func() { pool.put(local) }
	})
}

// outputGrad43 writes A t at every index of the slices, as vector.OutputGrad43.
func outputGrad43[T float](o *[6][]T, t *[4][]T) {
	n, from := len(o[0]), vectorPrefix(vector.OutputGrad43, o[:], t[:])
	a, b, c, d := t[0][:n], t[1][:n], t[2][:n], t[3][:n]
	for i := from; i < n; i++ {
		outputGradPoints43(o, i, a[i], b[i], c[i], d[i])
	}
}

// gradColumns43 writes A of the 4-vectors row[4t .. 4t+3] for the len(o[0]) tiles t, as
// vector.WinogradGradColumns43.
func gradColumns43[T float](o *[6][]T, row []T) {
	n, from := len(o[0]), 0
	if o32, ok := any(o[:]).([][]float32); ok && vector.HasAVX2 && n >= 8 {
		from = n &^ 7
		var oc [6][]float32
		for i, s := range o32 {
			oc[i] = s[:from]
		}
		vector.WinogradGradColumns43(oc[:], any(row).([]float32))
	}
	for t := from; t < n; t++ {
		q := row[4*t : 4*t+4 : 4*t+4]
		outputGradPoints43(o, t, q[0], q[1], q[2], q[3])
	}
}

// outputGradPoints43 writes A (a, b, c, d) to index i of the six slices.
func outputGradPoints43[T float](o *[6][]T, i int, a, b, c, d T) {
	ac, bd, a4c, b4d := a+c, b+d, a+4*c, b+4*d
	o[0][i], o[1][i], o[2][i], o[3][i], o[4][i], o[5][i] = a, ac+bd, ac-bd, a4c+2*b4d, a4c-2*b4d, d
}

// filterAdjoint43 writes Gᵀ f at every index of the slices, as vector.FilterAdjoint43, with the
// coefficients rounded to T.
func filterAdjoint43[T float](o *[3][]T, f *[6][]T) {
	n, from := len(o[0]), vectorPrefix(vector.FilterAdjoint43, o[:], f[:])
	quarter, sixth, twelfth, twentyFourth := T(1)/4, T(1)/6, T(1)/12, T(1)/24
	f0, f1, f2, f3, f4, f5 := f[0][:n], f[1][:n], f[2][:n], f[3][:n], f[4][:n], f[5][:n]
	o0, o1, o2 := o[0][:n], o[1][:n], o[2][:n]
	for i := from; i < n; i++ {
		s12, s34 := f1[i]+f2[i], f3[i]+f4[i]
		o0[i] = (f0[i]*quarter - s12*sixth) + s34*twentyFourth
		o1[i] = (f2[i]-f1[i])*sixth + (f3[i]-f4[i])*twelfth
		o2[i] = (s34-s12)*sixth + f5[i]
	}
}

// vectorPrefix runs the float32 vector kernel k on the longest prefix of the slices of o and in whose length
// is a multiple of 8 and returns that length, when T is float32 and the kernels can run; else it returns 0.
// The caller computes the rest in Go.
func vectorPrefix[T float](k vector.Kernel43, o, in [][]T) int {
	o32, ok := any(o).([][]float32)
	n := len(o[0]) &^ 7
	if !ok || !vector.HasAVX2 || n == 0 {
		return 0
	}
	var oc, ic [6][]float32
	for i, s := range o32 {
		oc[i] = s[:n]
	}
	for i, s := range any(in).([][]float32) {
		ic[i] = s[:n]
	}
	vector.Combine43(k, oc[:len(o)], ic[:len(in)])
	return n
}
