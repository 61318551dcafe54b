package ops

import "github.com/bicyc/bicyc/models/ops/internal/vector"

// Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray, "Fast Algorithms for Convolutional Neural
// Networks", 2016) computes a 2x2 tile of a 3x3 convolution's output from the 4x4 tile of input around it as
//
//	Y = Aᵀ [ (G g Gᵀ) ⊙ (Bᵀ d B) ] A
//
// with the filter g (3x3), the input tile d (4x4), ⊙ the element-wise product and
//
//	Bᵀ = | 1  0 -1  0 |    G = | 1    0    0   |    Aᵀ = | 1  1  1  0 |
//	     | 0  1  1  0 |        | 1/2  1/2  1/2 |         | 0  1 -1 -1 |
//	     | 0 -1  1  0 |        | 1/2 -1/2  1/2 |
//	     | 0  1  0 -1 |        | 0    0    1   |
//
// Summed over input channels, the element-wise products of each of the 16 transformed points ξ are one matrix
// product, M[ξ] [O, tiles] = U[ξ] [O, C] · V[ξ] [C, tiles], so a convolution costs 16 products of that size
// instead of one [O, 9·C] · [9·C, 4·tiles] product: 2.25 times fewer multiplications, a saving that no
// faster matrix product gives an im2col convolution, which is bound by the sgemm ceiling. The input
// gradient is the same kind of convolution, and the filter gradient the adjoint of the forward transform in
// the filters (winogradFilterGrad). The transforms use only additions and halvings, so float32 results stay
// within a few units of rounding of im2col's (TestWinogradMatchesIm2col). The forward convolution and the
// input gradient of the larger planes use F(4x4, 3x3) instead (winograd43.go): 4 times fewer
// multiplications, for about ten times the rounding error.

// winogradPoints is the number of transformed points of an F(2x2, 3x3) tile, 4x4.
const winogradPoints = 16

// winogradSkew is the padding, in elements, between the matrices of consecutive points in the transformed
// inputs and the products. The transforms access all 16 points of a tile at once; with matrices of a power of
// two bytes (64 channels · 128 tiles · 4 bytes), those 16 addresses would share a few cache sets and evict
// one another (the input transform took five times as long without it, in a profile of BenchmarkConv2d3x3).
const winogradSkew = 32

// winogradMinChannels is the fewest input and output channels for which a 3x3 convolution uses Winograd:
// with fewer, the products are too thin for the BLAS to run fast and the transforms, whose cost per channel
// does not shrink, outweigh the saved multiplications. BenchmarkConv2d3x3 on the idle machine, with the
// vectorised transforms, CPU time of im2col -> Winograd per pass (forward, input gradient, filter gradient):
// 4 channels at 32x32 batch 64 0.52/0.78/0.53 -> 0.74/0.69/0.66 ms (slower), 8 channels 1.38/1.92/1.31 ->
// 1.20/1.20/1.14, 16 channels 6.6/7.1/6.0 -> 2.9/3.0/3.5, 32 channels 24/21/20 -> 9.5/8.4/9.1, and the
// default backbone's 32 -> 64 channels at 14x14 batch 128 14/15/15 -> 8.3/8.2/8.4. Convolutions with 1 or 3
// input channels (the first layers) stay on im2col, where Winograd was 1.4-5 times slower.
var winogradMinChannels = 8

// winogradChunkColumns is the number of output positions a chunk of images aims for in a Winograd
// convolution: 128 tiles, so that at 64 channels a chunk's transformed inputs and products, 512 KB each, stay
// together in the 1 MB second-level cache of a core between the transforms and the products. The transforms
// are bound by their scattered stores: with 512 tiles per chunk (2 MB each), the convolutions with 64 and 128
// channels took 10-25% more CPU time (BenchmarkConv2d3x3 on the loaded shared machine).
const winogradChunkColumns = 512

// winogradMinSaving is the smallest saving of multiplications (see winogradSaving) for which a convolution
// uses Winograd: odd output sizes save less, 1.72 times at 7x7 (ResNet-18's layer4 at 224x224, the default
// backbone's third convolution), where Winograd with vectorised transforms measured faster than im2col in
// all three passes for 512 channels, batch 16 (forward 53 -> 42-47, input gradient 51 -> 41-48, filter
// gradient 78-85 -> 43-52 CPU-ms, BenchmarkConv2d3x3 on the nearly idle shared machine) and in sum for the
// default backbone's 64 -> 128 channels, batch 128 (forward 16 -> 13-15, input gradient 14-18 -> 15-18,
// filter gradient 17 -> 14-16). Smaller planes save too little: 1.56 times at 5x5, 1 at 1x1.
var winogradMinSaving = 1.7

// winograd reports a convolution that uses Winograd F(2x2, 3x3): 3x3, stride 1, same padding, with at least
// winogradMinChannels input and output channels and a saving of at least winogradMinSaving.
func (g convGeom) winograd() bool {
	return g.k == 3 && g.stride == 1 && g.pad == 1 &&
		min(g.c, g.o) >= winogradMinChannels && g.winogradSaving() >= winogradMinSaving
}

// winogradSaving returns how many times fewer multiplications Winograd needs than im2col for g's output
// plane, 9·H'·W' / (16·tiles): 2.25 for even sizes, less for odd ones, whose last tiles overhang the plane.
func (g convGeom) winogradSaving() float64 {
	down, across := g.tiles()
	return float64(9*g.oh*g.ow) / float64(16*down*across)
}

// tiles returns the number of 2x2 output tiles of one image, down and across; with an odd output size the
// last tiles overhang it.
func (g convGeom) tiles() (down, across int) { return (g.oh + 1) / 2, (g.ow + 1) / 2 }

// transposed returns the geometry of the input gradient of a same-padding convolution seen as a
// convolution: dy [N,O,H,W] correlated with the filters rotated by 180° and with their channels swapped,
// [C,O,3,3], gives dx [N,C,H,W].
func (g convGeom) transposed() convGeom {
	t := g
	t.c, t.o = g.o, g.c
	t.h, t.w, t.oh, t.ow = g.oh, g.ow, g.h, g.w
	return t
}

// winogradForward computes y = Conv2d(x, w) for a convolution with g.winograd(), by F(4x4, 3x3) where it
// saves more (see winograd43), else by F(2x2, 3x3).
func winogradForward[T float](g convGeom, x, w, y []T) {
	if g.winograd43() {
		winograd43Forward(g, x, w, y)
	} else {
		winograd23Forward(g, x, w, y)
	}
}

// winograd23Forward computes y = Conv2d(x, w) by F(2x2, 3x3).
func winograd23Forward[T float](g convGeom, x, w, y []T) {
	pool := scratchOf[T]()
	u := pool.get(winogradPoints * (g.o*g.c + winogradSkew))
	defer pool.put(u)
	winogradFilters(w, u, g.o, g.c, false)
	winogradConv(g, x, u, y, false)
}

// winogradInputGrad computes dx from dy for a convolution with g.winograd(): the input gradient of a 3x3
// stride-1 same-padding convolution is itself one,
//
//	dx[n,c,i,j] = Σ_o Σ_a Σ_b w[o,c,2-a,2-b] · dy[n,o,i+a-1,j+b-1]
//
// It uses F(4x4, 3x3) where that saves more (see winograd43), else F(2x2, 3x3).
func winogradInputGrad[T float](g convGeom, w, dy, dx []T) {
	if g.winograd43() {
		winograd43InputGrad(g, w, dy, dx)
	} else {
		winograd23InputGrad(g, w, dy, dx)
	}
}

// winograd23InputGrad computes dx from dy by F(2x2, 3x3).
func winograd23InputGrad[T float](g convGeom, w, dy, dx []T) {
	pool := scratchOf[T]()
	u := pool.get(winogradPoints * (g.o*g.c + winogradSkew))
	defer pool.put(u)
	winogradFilters(w, u, g.o, g.c, true)
	winogradConv(g.transposed(), dy, u, dx, true)
}

// winogradFilters writes the transformed filters U[ξ] = (G w[o,c] Gᵀ)[ξ] of w [o,c,3,3] to u as 16 matrices
// [o, c], o·c+winogradSkew elements apart; with flip, of the filters rotated by 180° (the input gradient's
// filters, to be used transposed). Keeping the [o, c] order for both lets the 16 matrices be written
// sequentially: written as [c, o], every store would touch another cache line. Float32 runs 8 filters at a
// time (vector.WinogradFilters), writing a rotated filter's points to their permuted places
// (winogradFlipped).
func winogradFilters[T float](w, u []T, o, c int, flip bool) {
	stride := o*c + winogradSkew
	parallelFor(o, 8, func(lo, hi int) {
		first := lo * c
		if u32, ok := any(u).([]float32); ok && vector.HasAVX2 {
			n := (hi - lo) * c &^ 7
			var offsets [16]int
			for xi := range offsets {
				offsets[xi] = xi*stride + first
				if flip {
					offsets[xi] = winogradFlipped(xi)*stride + first
				}
			}
			vector.WinogradFilters(u32, &offsets, any(w).([]float32)[9*first:9*(first+n)])
			first += n
		}
		var f [9]T
		for k := first; k < hi*c; k++ {
			filter := w[k*9 : (k+1)*9]
			copy(f[:], filter)
			if flip {
				for t := range f {
					f[t] = filter[8-t]
				}
			}
			winogradFilter(&f, u[k:], stride)
		}
	})
}

// winogradFlipped returns the point of the transform of a filter rotated by 180° that equals point xi of the
// filter's own transform: with J the reversal of 3 elements, G J = P G, P swapping rows 0 and 3, so
// G (J f J) Gᵀ = P (G f Gᵀ) Pᵀ, and point (r, k) moves to (p(r), p(k)), p swapping 0 and 3.
func winogradFlipped(xi int) int {
	p := [4]int{3, 1, 2, 0}
	return 4*p[xi/4] + p[xi%4]
}

// winogradFilter writes the 16 points of G f Gᵀ for the 3x3 filter f (row-major), point ξ to u[ξ·stride].
func winogradFilter[T float](f *[9]T, u []T, stride int) {
	var gf [4][3]T // G f
	for j := 0; j < 3; j++ {
		a, b, c := f[j], f[3+j], f[6+j]
		gf[0][j], gf[1][j], gf[2][j], gf[3][j] = a, (a+b+c)/2, (a-b+c)/2, c
	}
	for r, row := range gf {
		a, b, c := row[0], row[1], row[2]
		u[4*r*stride] = a
		u[(4*r+1)*stride] = (a + b + c) / 2
		u[(4*r+2)*stride] = (a - b + c) / 2
		u[(4*r+3)*stride] = c
	}
}

// winogradConv computes y [N,O,H,W] from x [N,C,H,W] and the transformed filters u, 16 matrices [O, C], or
// [C, O] to be transposed if transposedFilters, O·C+winogradSkew elements apart. It works chunk by chunk:
// transform the chunk's input tiles, 16 products, inverse transform into y. The chunks are split across
// goroutines as in convForward.
func winogradConv[T float](g convGeom, x, u, y []T, transposedFilters bool) {
	lda := g.c
	if transposedFilters {
		lda = g.o
	}
	down, across := g.tiles()
	perImage := down * across
	ch := g.chunkingFor(winogradChunkColumns)
	pool := scratchOf[T]()
	parallelEach(ch.chunks, ch.workers, func() (func(int), func()) {
		most := ch.images * perImage
		v, m := pool.get(winogradPoints*(g.c*most+winogradSkew)), pool.get(winogradPoints*(g.o*most+winogradSkew))
		padded := pool.get(winogradPaddedLen(down, across))
		clear(padded)
		return func(i int) {
			first, count := ch.span(g, i)
			tiles := count * perImage
			vs, ms := g.c*tiles+winogradSkew, g.o*tiles+winogradSkew
			winogradInputs(g, x, v, padded, first, count, vs)
			for xi := range winogradPoints {
				gemm(ch.gemmThreads, transposedFilters, false, g.o, tiles, g.c, u[xi*(g.o*g.c+winogradSkew):], lda,
					v[xi*vs:], tiles, 0, m[xi*ms:], tiles)
			}
			winogradOutputs(g, m, y, first, count, ms)
		}, func() { pool.put(v, m, padded) }
	})
}

// winogradInputs writes the transformed input tiles V[ξ] [C, tiles] of images first..first+count-1 of x to
// v, tile t = (i·down + ty)·across + tx of image first+i covering input rows 2ty-1..2ty+2 and columns
// 2tx-1..2tx+2. Each plane is first copied into padded, a (2·down+2)x(2·across+2) plane followed by 8
// elements of slack (winogradPaddedLen), which the caller has zeroed, so that no tile needs bounds checks;
// the copies never write the border. The planes go channel by channel, each channel's images in order,
// so that the tiles of v are written in increasing order (see winogradInputTiles32).
func winogradInputs[T float](g convGeom, x, v, padded []T, first, count, stride int) {
	down, across := g.tiles()
	perImage, width, hw := down*across, 2*across+2, g.h*g.w
	tiles := count * perImage
	pool := scratchOf[T]()
	rows := pool.get(max(4*width, vector.WinogradInputScratch(across)))
	defer pool.put(rows)
	for c := 0; c < g.c; c++ {
		for i := 0; i < count; i++ {
			plane := x[((first+i)*g.c+c)*hw : ((first+i)*g.c+c+1)*hw]
			for r := 0; r < g.h; r++ {
				copyRow(padded[(r+1)*width+1:], plane[r*g.w:(r+1)*g.w])
			}
			winogradInputTiles(padded, v[c*tiles+i*perImage:], rows, down, across, stride)
		}
	}
}

// copyRow copies min(len(dst), len(src)) elements of src to dst, as copy does, but element by element for
// rows of under 16 elements: the planes of the last stages have rows of 4 to 14, for which the call to
// memmove cost more than the copy (memmove was 5% of a ResNet-18 step's CPU time, 70% of it for the padded
// planes of winogradInputs).
func copyRow[T float](dst, src []T) {
	n := min(len(dst), len(src))
	if n >= 16 {
		copy(dst, src)
		return
	}
	dst, src = dst[:n], src[:n]
	for i, v := range src {
		dst[i] = v
	}
}

// winogradPaddedLen returns the length of the padded plane of winogradInputs for down x across tiles.
func winogradPaddedLen(down, across int) int { return (2*down+2)*(2*across+2) + 8 }

// winogradInputTiles writes Bᵀ d B of every tile d of one padded plane, point ξ of tile t to v[ξ·stride+t],
// in two passes per row of tiles: Bᵀ d for all tiles at once, as four whole rows combined from the four
// padded rows (into rows, scratch of 4·width), then each of these rows times B gives four points of every
// tile. Each pass is a few slices wide, so that float32 runs it eight tiles at a time (winogradInputTiles32);
// one pass over all 16 points spilled its slices to the stack and took about twice as long.
func winogradInputTiles[T float](padded, v, rows []T, down, across, stride int) {
	if p32, ok := any(padded).([]float32); ok && vector.HasAVX2 {
		winogradInputTiles32(p32, any(v).([]float32), any(rows).([]float32), down, across, stride)
		return
	}
	width := 2*across + 2
	a, b, c, e := rows[:width], rows[width:2*width], rows[2*width:3*width], rows[3*width:4*width]
	for ty := 0; ty < down; ty++ {
		in := padded[2*ty*width : (2*ty+4)*width]
		winogradRows(a, b, c, e, in[:width], in[width:2*width], in[2*width:3*width], in[3*width:])
		for k, row := range [4][]T{a, b, c, e} {
			o0, o1, o2, o3 := points4(v, 4*k*stride+ty*across, stride, across)
			winogradColumns(o0, o1, o2, o3, row)
		}
	}
}

// winogradInputTiles32 is winogradInputTiles with the AVX2 kernels (vector.WinogradInputPlane), which run
// on whole groups of 8: each row of tiles is rounded up to a multiple of 8 tiles, so that the small planes
// of the last stages (2 or 4 tiles across) run vectorised too instead of in scalar loops. The rows of the
// first pass then read up to 7 elements past a padded row (the next row, or the slack of
// winogradPaddedLen), and the second pass writes up to 7 tiles past the row of tiles: into the tiles of
// later rows, images or channels, which winogradInputs writes afterwards, or, past the last channel, into
// the skew after each point's matrix.
func winogradInputTiles32(padded, v, rows []float32, down, across, stride int) {
	vector.WinogradInputPlane(v, stride, padded, rows, down, across)
}

// winogradRows writes a = r0 - r2, b = r1 + r2, c = r2 - r1, e = r1 - r3: Bᵀ d for a row of tiles spanning the
// rows r0..r3. All slices have the length of a.
func winogradRows[T float](a, b, c, e, r0, r1, r2, r3 []T) {
	b, c, e = b[:len(a)], c[:len(a)], e[:len(a)]
	r0, r1, r2, r3 = r0[:len(a)], r1[:len(a)], r2[:len(a)], r3[:len(a)]
	for j := range a {
		a[j], b[j], c[j], e[j] = r0[j]-r2[j], r1[j]+r2[j], r2[j]-r1[j], r1[j]-r3[j]
	}
}

// winogradColumns writes row·B for the tiles of one row of Bᵀ d, tile t covering row[2t .. 2t+3]: (a, b, c,
// d) gives (a-c, b+c, c-b, b-d) in o0[t], o1[t], o2[t], o3[t]. o0..o3 have one length n, row 2n+2 elements.
func winogradColumns[T float](o0, o1, o2, o3, row []T) {
	o1, o2, o3 = o1[:len(o0)], o2[:len(o0)], o3[:len(o0)]
	for tx := range o0 {
		q := row[2*tx : 2*tx+4 : 2*tx+4]
		o0[tx], o1[tx], o2[tx], o3[tx] = q[0]-q[2], q[1]+q[2], q[2]-q[1], q[1]-q[3]
	}
}

// points4 returns the four slices v[at+i·stride : at+i·stride+n], i = 0..3, cut to one length so that a loop
// over the first's indices needs no bounds checks on the others.
func points4[T float](v []T, at, stride, n int) (p0, p1, p2, p3 []T) {
	p0 = v[at : at+n]
	p1, p2, p3 = v[at+stride:at+stride+n], v[at+2*stride:at+2*stride+n], v[at+3*stride:at+3*stride+n]
	return p0, p1[:len(p0)], p2[:len(p0)], p3[:len(p0)]
}

// winogradOutputs writes images first..first+count-1 of y from the products M[ξ] [O, tiles] in m, one output
// channel at a time: the output transform of all its tiles in one pass (winogradOutputRows), then a copy of
// the output rows into y. A pass over all tiles of a channel rather than plane by plane keeps the vector
// kernel busy on the small planes of the last stages (2x2 tiles at 4x4), where the per-plane calls and
// slicing took much of the time.
func winogradOutputs[T float](g convGeom, m, y []T, first, count, stride int) {
	rows, even, odd, tiles, perImage, across := outputTileRows[T](g, count)
	defer scratchOf[T]().put(rows)
	p := g.outPlane()
	for o := 0; o < g.o; o++ {
		winogradOutputRows(even, odd, m[o*tiles:], stride)
		for i := 0; i < count; i++ {
			plane := y[((first+i)*g.o+o)*p : ((first+i)*g.o+o+1)*p]
			tileRows := [2][]T{even[2*i*perImage : 2*(i+1)*perImage], odd[2*i*perImage : 2*(i+1)*perImage]}
			for r := 0; r < g.oh; r++ { // output row r is row r%2 of the tiles' row r/2
				copyRow(plane[r*g.ow:(r+1)*g.ow], tileRows[r%2][r/2*2*across:])
			}
		}
	}
}

// outputTileRows takes from the scratch pool the even and odd tile rows of a chunk of count images, the
// layout of winogradOutputRows, and returns them with the chunk's tiles, its tiles per image and per row
// of a plane; the caller puts rows back.
func outputTileRows[T float](g convGeom, count int) (rows, even, odd []T, tiles, perImage, across int) {
	down, across := g.tiles()
	perImage = down * across
	tiles = count * perImage
	rows = scratchOf[T]().get(4 * tiles)
	return rows, rows[:2*tiles], rows[2*tiles:], tiles, perImage, across
}

// winogradOutputRows writes Aᵀ M A of len(even)/2 tiles, point ξ of tile t read from m[ξ·stride+t], output
// row 0 of tile t to even[2t], even[2t+1] and row 1 to odd[2t], odd[2t+1] (see vector.WinogradOutput): a row
// of tiles' stretch of even (or odd) is then a row of the output plane, its last element dropped when the
// plane has an odd width.
func winogradOutputRows[T float](even, odd, m []T, stride int) {
	n := 0
	if e32, ok := any(even).([]float32); ok && vector.HasAVX2 {
		n = len(even) / 2 &^ 7
		vector.WinogradOutput(e32[:2*n], any(odd).([]float32)[:2*n], any(m).([]float32), stride)
	}
	for t := n; t < len(even)/2; t++ {
		var s, d [4]T
		for j := range 4 {
			m0, m1, m2, m3 := m[j*stride+t], m[(4+j)*stride+t], m[(8+j)*stride+t], m[(12+j)*stride+t]
			s[j], d[j] = m0+m1+m2, m1-m2-m3
		}
		even[2*t], even[2*t+1] = s[0]+s[1]+s[2], s[1]-s[2]-s[3]
		odd[2*t], odd[2*t+1] = d[0]+d[1]+d[2], d[1]-d[2]-d[3]
	}
}

// winogradFilterGrad computes dw [O,C,3,3] from x and dy for a convolution with g.winograd(), as the adjoint
// of winogradForward in w:
//
//	dw[o,c] = Gᵀ [ Σ_tiles (A dy_tile Aᵀ) ⊙ (Bᵀ d_tile B) ] G
//
// summed over the tiles of all images, dy_tile the 2x2 tile of dy[n,o] (zeros past an odd-sized plane) and
// d_tile the 4x4 tile of x[n,c] it depends on. The sum of each point ξ is one product [O, tiles] · [tiles, C]
// per chunk. Each goroutine sums its chunks into its own partial sums, added in goroutine order, unless
// the partial sums, 16·O·C, outweigh a goroutine's transformed tiles (winogradSharedPartial). Where the
// forward pass uses F(4x4, 3x3) on sides from 16, so does its adjoint (see winograd43FilterGradient).
func winogradFilterGrad[T float](g convGeom, x, dy, dw []T) {
	if g.winograd43FilterGradient() {
		winograd43FilterGrad(g, x, dy, dw)
	} else {
		winograd23FilterGrad(g, x, dy, dw)
	}
}

// winograd23FilterGrad computes dw by F(2x2, 3x3).
func winograd23FilterGrad[T float](g convGeom, x, dy, dw []T) {
	down, across := g.tiles()
	filterGradSums(g, g.chunkingFor(winogradChunkColumns), down*across, winogradPoints,
		func(ch convChunks, partial []T, lo, hi int) { winogradFilterGradChunks(g, ch, x, dy, partial, lo, hi) },
		func(sums [][]T, stride int) {
			parallelFor(g.o, 8, func(lo, hi int) { winogradFilterAdjoints(sums, dw, lo*g.c, hi*g.c, stride) })
		})
}

// filterGradSums runs a Winograd filter gradient's chunks: sum adds chunks lo..hi-1 into partial, points
// matrices [O, C] O·C+winogradSkew elements apart, one partial per goroutine (or one shared by all, see
// winogradSharedPartial; perImage is the number of tiles of an image); adjoint then gets the partials that
// were written, in goroutine order, and their stride.
func filterGradSums[T float](g convGeom, ch convChunks, perImage, points int,
	sum func(ch convChunks, partial []T, lo, hi int), adjoint func(sums [][]T, stride int)) {
	if winogradSharedPartial(g, ch, perImage) {
		ch.workers, ch.gemmThreads = 1, ch.workers*ch.gemmThreads
	}
	pool := scratchOf[T]()
	stride := g.o*g.c + winogradSkew
	partials := make([][]T, ch.workers)
	for w := range partials {
		partials[w] = pool.get(points * stride)
	}
	defer pool.put(partials...)
	used := make([]bool, ch.workers)
	parallelRanges(ch.chunks, ch.workers, func(worker, lo, hi int) {
		sum(ch, partials[worker], lo, hi)
		used[worker] = hi > lo
	})
	var sums [][]T
	for w, p := range partials {
		if used[w] {
			sums = append(sums, p)
		}
	}
	adjoint(sums, stride)
}

// winogradFilterAdjoints writes dw for the filters first..last-1 (numbered o·C + c) from the partial sums,
// point ξ of filter k at s[ξ·stride + k]: the partials are added into the first, in goroutine order, then
// Gᵀ f G gives each filter's gradient, for float32 8 filters at a time (vector.WinogradFilterAdjoint, into
// scratch laid out by element, then interleaved into dw).
func winogradFilterAdjoints[T float](sums [][]T, dw []T, first, last, stride int) {
	p := sums[0]
	for _, s := range sums[1:] {
		for xi := range winogradPoints {
			at := xi * stride
			addTo(p[at+first:at+last], s[at+first:at+last])
		}
	}
	if p32, ok := any(p).([]float32); ok && vector.HasAVX2 && last-first >= 8 {
		n := (last - first) &^ 7
		pool := scratchOf[float32]()
		d := pool.get(9 * n)
		vector.WinogradFilterAdjoint(d, p32[first:], stride)
		dw32 := any(dw).([]float32)[9*first : 9*(first+n)]
		for e := range 9 {
			for k, v := range d[e*n : (e+1)*n] {
				dw32[9*k+e] = v
			}
		}
		pool.put(d)
		first += n
	}
	var f [winogradPoints]T
	for k := first; k < last; k++ {
		for xi := range f {
			f[xi] = p[xi*stride+k]
		}
		winogradFilterAdjoint(&f, dw[k*9:(k+1)*9])
	}
}

// winogradSharedPartial reports whether the filter gradient of g is better summed into one partial sum by
// one goroutine whose matrix products use all threads: when a goroutine's partial sums, 16·O·C, are at
// least twice its transformed tiles, 16·(O+C)·tiles (ResNet-18's 512-channel stage at 4x4), one partial per
// goroutine would be the largest of the convolution's buffers and raise the peak memory of a training step
// by 16 MB per goroutine, and the products are large enough for the BLAS to split well (BenchmarkConv2d3x3:
// 51 -> 46 CPU-ms at 512 channels, 4x4, batch 64). With thinner products the serial transforms cost more
// than the memory is worth: at 256 channels, 14x14, batch 16 (ratio 1.3) one goroutine took 24 instead of 16
// ms. perImage is the number of tiles of an image.
func winogradSharedPartial(g convGeom, ch convChunks, perImage int) bool {
	return ch.workers > 1 && g.o*g.c >= 2*(g.o+g.c)*ch.images*perImage
}

// sideBySide runs a and b, on two goroutines when threads > 1. A filter gradient's chunk transforms its input
// and its output gradient into different buffers; where one goroutine sums the chunks into a shared partial
// (winogradSharedPartial) and its products use the other threads, the two transforms run side by side
// instead of one after the other while the other cores wait.
func sideBySide(threads int, a, b func()) {
	parallelUnits(2, threads, func(k int) {
		if k == 0 {
			a()
		} else {
			b()
		}
	})
}

// winogradFilterGradChunks writes to partial the sums over chunks lo..hi-1 of the products
// (A dy Aᵀ)[ξ] [O, tiles] · (Bᵀ x B)[ξ]ᵀ [tiles, C], 16 matrices [O, C] O·C+winogradSkew elements apart.
func winogradFilterGradChunks[T float](g convGeom, ch convChunks, x, dy, partial []T, lo, hi int) {
	down, across := g.tiles()
	perImage := down * across
	most := ch.images * perImage
	pool := scratchOf[T]()
	v, m := pool.get(winogradPoints*(g.c*most+winogradSkew)), pool.get(winogradPoints*(g.o*most+winogradSkew))
	padded := pool.get(winogradPaddedLen(down, across))
	defer pool.put(v, m, padded)
	clear(padded)
	stride := g.o*g.c + winogradSkew
	for i := lo; i < hi; i++ {
		first, count := ch.span(g, i)
		tiles := count * perImage
		vs, ms := g.c*tiles+winogradSkew, g.o*tiles+winogradSkew
		sideBySide(ch.gemmThreads,
			func() { winogradInputs(g, x, v, padded, first, count, vs) },
			func() { winogradOutputGrads(g, dy, m, first, count, ms) })
		var beta T
		if i > lo {
			beta = 1
		}
		for xi := range winogradPoints {
			gemm(ch.gemmThreads, false, true, g.o, g.c, tiles, m[xi*ms:], tiles, v[xi*vs:], tiles,
				beta, partial[xi*stride:], g.c)
		}
	}
}

// winogradOutputGrads writes A dy Aᵀ, the adjoint of the output transform, of every 2x2 tile of dy of images
// first..first+count-1 to m, point ξ of tile t of output channel o at m[ξ·stride + o·tiles + t], tiles
// numbered as in winogradInputs. As winogradOutputs, it works a channel at a time: the rows of its planes
// are copied into the layout of winogradOutputRows (zeros past an odd-sized plane), then transformed in one
// pass (winogradOutputGradRows).
func winogradOutputGrads[T float](g convGeom, dy, m []T, first, count, stride int) {
	rows, even, odd, tiles, perImage, across := outputTileRows[T](g, count)
	defer scratchOf[T]().put(rows)
	clear(rows) // the parts past an odd-sized plane stay zero
	p := g.outPlane()
	for o := 0; o < g.o; o++ {
		for i := 0; i < count; i++ {
			plane := dy[((first+i)*g.o+o)*p : ((first+i)*g.o+o+1)*p]
			tileRows := [2][]T{even[2*i*perImage : 2*(i+1)*perImage], odd[2*i*perImage : 2*(i+1)*perImage]}
			for r := 0; r < g.oh; r++ {
				copyRow(tileRows[r%2][r/2*2*across:], plane[r*g.ow:(r+1)*g.ow])
			}
		}
		winogradOutputGradRows(m[o*tiles:], stride, even, odd)
	}
}

// winogradOutputGradRows writes A t Aᵀ of the len(even)/2 tiles t = (a b / c d), (a, b) read from even[2t],
// even[2t+1] and (c, d) from odd, point ξ of tile t to m[ξ·stride+t] (see vector.WinogradOutputGrad).
func winogradOutputGradRows[T float](m []T, stride int, even, odd []T) {
	n := 0
	if e32, ok := any(even).([]float32); ok && vector.HasAVX2 {
		n = len(even) / 2 &^ 7
		vector.WinogradOutputGrad(any(m).([]float32), stride, e32[:2*n], any(odd).([]float32)[:2*n])
	}
	for t := n; t < len(even)/2; t++ {
		a, b, c, d := even[2*t], even[2*t+1], odd[2*t], odd[2*t+1]
		for r, row := range [4][2]T{{a, b}, {a + c, b + d}, {a - c, b - d}, {-c, -d}} {
			x, y := row[0], row[1]
			m[4*r*stride+t], m[(4*r+1)*stride+t], m[(4*r+2)*stride+t], m[(4*r+3)*stride+t] = x, x+y, x-y, -y
		}
	}
}

// winogradFilterAdjoint writes Gᵀ f G, the adjoint of winogradFilter, for the 16 points f (row-major 4x4) to
// the 3x3 filter gradient d (row-major).
func winogradFilterAdjoint[T float](f *[winogradPoints]T, d []T) {
	var gf [3][4]T // Gᵀ f
	for j := 0; j < 4; j++ {
		a, b, c, e := f[j], f[4+j], f[8+j], f[12+j]
		gf[0][j], gf[1][j], gf[2][j] = a+(b+c)/2, (b-c)/2, (b+c)/2+e
	}
	for r, row := range gf {
		a, b, c, e := row[0], row[1], row[2], row[3]
		d[3*r], d[3*r+1], d[3*r+2] = a+(b+c)/2, (b-c)/2, (b+c)/2+e
	}
}
