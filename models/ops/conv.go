package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Conv2d returns the 2-D cross-correlation of x with the filters w, without bias, as PyTorch's
// nn.Conv2d(bias=False) computes it:
//
//	y[n,o,i,j] = Σ_c Σ_kh Σ_kw w[o,c,kh,kw] · x[n,c,i·stride+kh-pad, j·stride+kw-pad]
//
// with zeros outside x. x is [N,C,H,W], w is [O,C,K,K] (square kernel), y is [N,O,H',W'] with
// H' = (H+2·pad-K)/stride+1 and the same for W'. It returns an error wrapping ErrShape if the shapes or dtypes
// do not fit or the output would be empty.
//
// The batch is processed in chunks of images, split across goroutines (see SetThreads). For a chunk, the
// forward pass lays the patches out as a [C·K·K, images·H'·W'] matrix (im2col; a 1x1 convolution with stride
// 1 and no padding only regroups x by channel) and computes the chunk's outputs with one matrix product
// through the registered BLAS. The backward pass rebuilds the chunk's patch matrix for the filter gradient
// (one product, summed over chunks) and computes the input gradient with one product followed by the inverse
// of im2col; for strided convolutions whose output has the size of the input's polyphase planes, both go
// through those planes (see convGeom.phased). Chunks hold about convChunkColumns output positions, so a
// patch matrix lives only in a small scratch buffer shared by all convolutions (see scratchPool) instead of
// one buffer of the whole batch per convolution: for ResNet-18 at batch 64 that was 151 MB per convolution
// of its first stage, twice.
//
// A 3x3 convolution with stride 1, pad 1 and at least 8 input and output channels, on an even-sized output
// plane or an odd one of 7x7 or larger (see convGeom.winograd), uses Winograd's F(2x2, 3x3) instead of
// im2col, in all passes (see winograd.go): 2.25 times fewer multiplications on even sizes, 1.72 at 7x7. On
// output sides that are multiples of 4 from 8, the forward pass and the input gradient use F(4x4, 3x3),
// 4 times fewer, and from 16 the filter gradient too (see convGeom.winograd43).
//
// When x is a leaf of the graph (an input such as the batch of images, or a parameter), the gradient with
// respect to x is not built: a network's input images never need one, and it would cost a matrix product
// and a col2im over the whole batch in every step. G.Grad then reports x as not differentiable; to
// differentiate with respect to such an x, pass it through an op first (for example G.Add(x, zero)).
func Conv2d(x, w *G.Node, stride, pad int) (*G.Node, error) {
	return conv2d(x, w, stride, pad, x.Op() != nil)
}

// Conv2dConstInput is Conv2d for an x that is not a leaf but whose gradient nothing needs: the output of
// frozen layers, which no trainable parameter precedes. Its gradient is not built, as for a leaf x. gorgonia
// asks an op for the gradients of all its inputs at once and runs every node it builds, so Conv2d would
// compute this one (a matrix product over the whole batch) in every step and discard it.
func Conv2dConstInput(x, w *G.Node, stride, pad int) (*G.Node, error) {
	return conv2d(x, w, stride, pad, false)
}

func conv2d(x, w *G.Node, stride, pad int, inputGrad bool) (*G.Node, error) {
	if err := checkConvShapes(x, w, stride, pad); err != nil {
		return nil, err
	}
	xs, ws := x.Shape(), w.Shape()
	geo := convGeom{n: xs[0], c: xs[1], h: xs[2], w: xs[3], o: ws[0], k: ws[2], stride: stride, pad: pad}
	geo.oh = (geo.h+2*pad-geo.k)/stride + 1
	geo.ow = (geo.w+2*pad-geo.k)/stride + 1
	return G.ApplyOp(&convOp{geo: geo, serial: opSerial.Add(1), inputGrad: inputGrad}, x, w)
}

func checkConvShapes(x, w *G.Node, stride, pad int) error {
	xs, ws := x.Shape(), w.Shape()
	switch {
	case xs.Dims() != 4:
		return fmt.Errorf("conv2d: input %q has shape %v, want [N,C,H,W]: %w", x.Name(), xs, ErrShape)
	case ws.Dims() != 4 || ws[2] != ws[3]:
		return fmt.Errorf("conv2d: filter %q has shape %v, want [O,C,K,K]: %w", w.Name(), ws, ErrShape)
	case ws[1] != xs[1]:
		return fmt.Errorf("conv2d: filter %q has %d input channels, input %q has %d: %w", w.Name(), ws[1], x.Name(), xs[1], ErrShape)
	case x.Dtype() != w.Dtype():
		return fmt.Errorf("conv2d: input %q is %v, filter %q is %v: %w", x.Name(), x.Dtype(), w.Name(), w.Dtype(), ErrShape)
	case stride < 1 || pad < 0:
		return fmt.Errorf("conv2d: stride %d, pad %d: want stride >= 1 and pad >= 0: %w", stride, pad, ErrShape)
	case xs.TotalSize() == 0 || ws.TotalSize() == 0:
		return fmt.Errorf("conv2d: input %q %v or filter %q %v is empty: %w", x.Name(), xs, w.Name(), ws, ErrShape)
	case xs[2]+2*pad < ws[2] || xs[3]+2*pad < ws[3]:
		return fmt.Errorf("conv2d: kernel %d does not fit input %q of shape %v with pad %d: %w", ws[2], x.Name(), xs, pad, ErrShape)
	}
	return checkFloat("conv2d", x)
}

// convGeom is the geometry of one convolution: input [n,c,h,w], filters [o,c,k,k], output [n,o,oh,ow].
type convGeom struct {
	n, c, h, w  int
	o, k        int
	stride, pad int
	oh, ow      int
}

func (g convGeom) inShape() tensor.Shape     { return tensor.Shape{g.n, g.c, g.h, g.w} }
func (g convGeom) filterShape() tensor.Shape { return tensor.Shape{g.o, g.c, g.k, g.k} }
func (g convGeom) outShape() tensor.Shape    { return tensor.Shape{g.n, g.o, g.oh, g.ow} }

// patch is the size of one column of the patch matrix, C·K·K; outPlane is the number of output positions of
// one image and channel, H'·W', and inPlane that of the input, H·W.
func (g convGeom) patch() int    { return g.c * g.k * g.k }
func (g convGeom) outPlane() int { return g.oh * g.ow }
func (g convGeom) inPlane() int  { return g.h * g.w }

// samePadding reports a stride-1 convolution whose output has the input's size: then every patch-matrix row is
// the image shifted by a constant offset, copied as one block.
func (g convGeom) samePadding() bool { return g.stride == 1 && g.oh == g.h && g.ow == g.w }

// phased reports a strided convolution with a kernel wider than its stride whose output has the size of the
// input's polyphase planes, ceil(H/stride) x ceil(W/stride): ResNet's 3x3 (pad 1) stride-2 convolutions and
// its 7x7 (pad 3) stride-2 stem. Plane (py, px) holds the input's rows py, py+stride, ... and columns px, px+stride,
// ...; input position (oy·stride-pad+kh, ox·stride-pad+kw) is element (oy+dy, ox+dx) of one plane, with
// (dy, dx) fixed for a kernel offset, so that every patch-matrix row is one plane shifted by a constant
// offset, copied as one block as for samePadding, and col2im adds each row into its plane as one block. Each
// input plane is split into its polyphase planes once (splitPhases) instead of being gathered element by
// element for each of the K·K rows, 2.25 times the input for a 3x3 kernel with stride 2.
//
// Only kernels wider than the stride take it: there several kernel offsets read each plane, while with a
// 1x1 kernel (ResNet's stride-2 shortcuts) the split would copy all planes to use one, and measured
// slower (BenchmarkStridedPatches: 6.6 -> 7.5 CPU-ms for im2col, 1.6 -> 3.7 for col2im at 64 channels,
// 32x32, batch 64).
func (g convGeom) phased() bool {
	return g.stride > 1 && g.k > g.stride &&
		(g.h+g.stride-1)/g.stride == g.oh && (g.w+g.stride-1)/g.stride == g.ow
}

// pointwise reports a 1x1 convolution whose patch matrix is x regrouped by channel.
func (g convGeom) pointwise() bool { return g.k == 1 && g.stride == 1 && g.pad == 0 }

// validCols returns the output columns [lo, hi) whose input column ox·stride-pad+kw lies inside the image.
func (g convGeom) validCols(kw int) (lo, hi int) {
	if d := g.pad - kw; d > 0 {
		lo = (d + g.stride - 1) / g.stride
	}
	last := g.w - 1 + g.pad - kw
	if last >= 0 {
		hi = min(last/g.stride+1, g.ow)
	}
	return min(lo, hi), hi
}

func (g convGeom) String() string {
	return fmt.Sprintf("x%v w%v stride %d pad %d", g.inShape(), g.filterShape(), g.stride, g.pad)
}

// convChunkColumns is the number of output positions (patch-matrix columns) a chunk of images aims for: enough
// for efficient matrix products, while a chunk's patch matrix stays a few megabytes (ResNet-18 at batch 64:
// 2.4 MB per goroutine in its first stage, one image per chunk, 9.4 MB in its 512-channel stage).
const convChunkColumns = 1024

// convChunks is how a convolution splits its batch: chunks of images images each (the last may have fewer),
// numbered 0..chunks-1 and assigned to workers goroutines as contiguous ranges (parallelRanges), so that a
// goroutine's partial sums are reproducible. gemmThreads is how many goroutines each matrix product may use:
// all of them when only one goroutine runs the chunks.
type convChunks struct {
	images, chunks, workers, gemmThreads int
}

// chunking returns the split of g's batch: about convChunkColumns positions per chunk, with a multiple of the
// number of goroutines as number of chunks, so that each goroutine gets the same number of images.
func (g convGeom) chunking() convChunks { return g.chunkingFor(convChunkColumns) }

// chunkingFor is chunking with about columns output positions per chunk.
func (g convGeom) chunkingFor(columns int) convChunks {
	threads := Threads()
	workers := min(threads, g.n)
	perChunk := max(1, columns/g.outPlane())
	rounds := (g.n + workers*perChunk - 1) / (workers * perChunk)
	images := (g.n + workers*rounds - 1) / (workers * rounds)
	chunks := (g.n + images - 1) / images
	workers = min(workers, chunks)
	return convChunks{images: images, chunks: chunks, workers: workers, gemmThreads: max(1, threads/workers)}
}

// span returns the first image of chunk i and its number of images.
func (c convChunks) span(g convGeom, i int) (first, count int) {
	first = i * c.images
	return first, min(c.images, g.n-first)
}

// convOp is the forward convolution.
type convOp struct {
	plainOp
	geo       convGeom
	serial    uint64
	inputGrad bool // build the gradient with respect to x (false when x is a leaf node)
	out       buffer
}

func (op *convOp) Arity() int                                     { return 2 }
func (op *convOp) Type() hm.Type                                  { return hm.NewFnType(tensorType(4), tensorType(4), tensorType(4)) }
func (op *convOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.geo.outShape(), nil }
func (op *convOp) WriteHash(h hash.Hash)                          { fmt.Fprint(h, op.String()) }
func (op *convOp) Hashcode() uint32                               { return hashOf(op) }
func (op *convOp) String() string                                 { return fmt.Sprintf("Conv2d#%d{%v}", op.serial, op.geo) }

func (op *convOp) DiffWRT(int) []bool { return []bool{op.inputGrad, true} }

func (op *convOp) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	var dx *G.Node
	var err error
	if op.inputGrad {
		if dx, err = G.ApplyOp(&convInputGradOp{geo: op.geo, serial: op.serial}, in[1], grad); err != nil {
			return nil, err
		}
	}
	dw, err := G.ApplyOp(&convFilterGradOp{geo: op.geo, serial: op.serial}, in[0], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx, dw}, nil
}

func (op *convOp) Do(vals ...G.Value) (G.Value, error) {
	if profileLabels.Load() {
		defer labelOp(op.String())()
	}
	g := op.geo
	x, err := denseOf("conv2d", 0, vals[0], vals[0].Dtype(), g.inShape())
	if err != nil {
		return nil, err
	}
	w, err := denseOf("conv2d", 1, vals[1], x.Dtype(), g.filterShape())
	if err != nil {
		return nil, err
	}
	dt := x.Dtype()
	y := op.out.get(dt, g.outShape()...)
	switch dt {
	case tensor.Float32:
		convForward(g, x.Float32s(), w.Float32s(), y.Float32s())
	case tensor.Float64:
		convForward(g, x.Float64s(), w.Float64s(), y.Float64s())
	default:
		return nil, fmt.Errorf("conv2d: dtype %v: %w", dt, ErrShape)
	}
	return y, nil
}

// convForward computes y from x and w, by Winograd for the 3x3 convolutions it suits (see convGeom.winograd),
// else by im2col.
func convForward[T float](g convGeom, x, w, y []T) {
	convPath(g, winogradForward[T], im2colForward[T])(g, x, w, y)
}

// convPath returns winograd if g suits Winograd's algorithm (see convGeom.winograd), else im2col.
func convPath[F any](g convGeom, winograd, im2col F) F {
	if g.winograd() {
		return winograd
	}
	return im2col
}

// im2colForward computes, chunk by chunk, y = w · im2col(x), regrouped from [O, images·P] to [images, O, P].
// A chunk of one image needs no regrouping: the product is written to y directly.
func im2colForward[T float](g convGeom, x, w, y []T) {
	taps := g.taps()
	ch := g.chunking()
	pool := scratchOf[T]()
	cols := ch.images * g.outPlane()
	parallelEach(ch.chunks, ch.workers, func() (func(int), func()) {
		col, prod := pool.get(g.patch()*cols), pool.get(g.o*cols)
		return func(i int) {
			first, count := ch.span(g, i)
			n := count * g.outPlane()
			pm := patches(g, taps, x, col, first, count)
			out := y[first*g.o*g.outPlane() : (first+count)*g.o*g.outPlane()]
			if count == 1 {
				gemm(ch.gemmThreads, false, false, g.o, n, g.patch(), w, g.patch(), pm, n, 0, out, n)
				return
			}
			gemm(ch.gemmThreads, false, false, g.o, n, g.patch(), w, g.patch(), pm, n, 0, prod, n)
			fromChannelMajor(prod, out, count, g.o, g.outPlane())
		}, func() { pool.put(col, prod) }
	})
}

// patches returns the patch matrix [C·K·K, count·P] of images first..first+count-1 of x, written to col, or
// for a pointwise convolution of one image, that image of x itself. taps is g.taps(), computed once per run.
func patches[T float](g convGeom, taps []convTap, x, col []T, first, count int) []T {
	hw := g.c * g.inPlane()
	if g.pointwise() {
		if count == 1 {
			return x[first*hw : (first+1)*hw]
		}
		toChannelMajor(x[first*hw:(first+count)*hw], col, count, g.c, g.inPlane())
		return col[:g.c*count*g.inPlane()]
	}
	im2col(g, taps, x, col, first, count)
	return col[:g.patch()*count*g.outPlane()]
}

// channelMajor returns dy of images first..first+count-1 as [O, count·P]: dy's own memory for one image,
// else a copy in buf.
func channelMajor[T float](g convGeom, dy, buf []T, first, count int) []T {
	op := g.o * g.outPlane()
	if count == 1 {
		return dy[first*op : (first+1)*op]
	}
	toChannelMajor(dy[first*op:(first+count)*op], buf, count, g.o, g.outPlane())
	return buf[:count*op]
}

// im2col writes the patch matrix of images first..first+count-1 of x to col: row (c·K+kh)·K+kw, column
// i·P+oy·W'+ox holds x[first+i, c, oy·stride-pad+kh, ox·stride-pad+kw], or 0 outside the image.
func im2col[T float](g convGeom, taps []convTap, x, col []T, first, count int) {
	p, hw := g.outPlane(), g.inPlane()
	cols := count * p
	var phases []T
	var used []bool
	if g.phased() {
		phases, used = scratchOf[T]().get(g.stride*g.stride*p), usedPhases(g, taps)
		defer scratchOf[T]().put(phases)
	}
	for i := 0; i < count; i++ {
		for c := 0; c < g.c; c++ {
			plane := x[((first+i)*g.c+c)*hw : ((first+i)*g.c+c+1)*hw]
			if phases != nil {
				splitPhases(g, plane, phases, used)
			}
			for t, tap := range taps {
				row := c*g.k*g.k + t
				dst := col[row*cols+i*p : row*cols+(i+1)*p]
				switch {
				case phases != nil:
					im2colShifted(g, phases[tap.phase*p:(tap.phase+1)*p], dst, tap)
				case g.samePadding():
					im2colShifted(g, plane, dst, tap)
				default:
					im2colRows(g, plane, dst, tap)
				}
			}
		}
	}
}

// usedPhases reports which polyphase planes of a phased convolution its taps read.
func usedPhases(g convGeom, taps []convTap) []bool {
	used := make([]bool, g.stride*g.stride)
	for _, t := range taps {
		used[t.phase] = true
	}
	return used
}

// splitPhases writes the used polyphase planes of plane [H, W] to phases: plane py·stride+px, [H', W'] at
// (py·stride+px)·H'·W', holds plane[i·stride+py, j·stride+px] at (i, j), and zeros past the image. With
// stride 2 and both column phases of a row phase used, each input row is split in one pass.
func splitPhases[T float](g convGeom, plane, phases []T, used []bool) {
	s, size := g.stride, g.outPlane()
	for ph, u := range used {
		if !u || (s == 2 && ph%2 == 1 && used[ph-1]) {
			continue
		}
		py, px := ph/s, ph%s
		dst := phases[ph*size : (ph+1)*size]
		pair := s == 2 && px == 0 && used[ph+1]
		n := (g.w - px + s - 1) / s // the columns of this phase inside the image
		for i := 0; i < g.oh; i++ {
			row := dst[i*g.ow : (i+1)*g.ow]
			y := i*s + py
			if y >= g.h {
				clear(row)
				if pair {
					clear(phases[(ph+1)*size+i*g.ow : (ph+1)*size+(i+1)*g.ow])
				}
				continue
			}
			src := plane[y*g.w+px : (y+1)*g.w]
			if pair {
				splitRow2(row, phases[(ph+1)*size+i*g.ow:(ph+1)*size+(i+1)*g.ow], src)
				continue
			}
			for j := range row[:n] {
				row[j] = src[j*s]
			}
			clear(row[n:])
		}
	}
}

// splitRow2 writes the even elements of src to even and the odd ones to odd, zeros after them; even and odd
// have (len(src)+1)/2 elements.
func splitRow2[T float](even, odd, src []T) {
	n := len(src) / 2
	odd = odd[:len(even)]
	for j := range n {
		q := src[2*j : 2*j+2 : 2*j+2]
		even[j], odd[j] = q[0], q[1]
	}
	if len(src)%2 == 1 {
		even[n], odd[n] = src[2*n], 0
	}
}

// mergePhases writes the polyphase planes in phases (the layout of splitPhases, all of them) back to plane
// [H, W]: the adjoint of splitPhases. With stride 2 each plane row is merged from two phase rows in one pass.
func mergePhases[T float](g convGeom, phases, plane []T) {
	s, size := g.stride, g.outPlane()
	for y := 0; y < g.h; y++ {
		py, i := y%s, y/s
		d := plane[y*g.w : (y+1)*g.w]
		if s == 2 {
			at := 2*py*size + i*g.ow
			mergeRow2(d, phases[at:at+g.ow], phases[at+size:at+size+g.ow])
			continue
		}
		for px := 0; px < s; px++ {
			src := phases[(py*s+px)*size+i*g.ow : (py*s+px)*size+(i+1)*g.ow]
			n := (g.w - px + s - 1) / s
			for j, v := range src[:n] {
				d[j*s+px] = v
			}
		}
	}
}

// mergeRow2 interleaves even and odd into d: d[2j] = even[j], d[2j+1] = odd[j], the adjoint of splitRow2.
func mergeRow2[T float](d, even, odd []T) {
	n := len(d) / 2
	even, odd = even[:n+len(d)%2], odd[:n]
	for j := range n {
		q := d[2*j : 2*j+2 : 2*j+2]
		q[0], q[1] = even[j], odd[j]
	}
	if len(d)%2 == 1 {
		d[2*n] = even[n]
	}
}

// validRows returns the output rows [lo, hi) whose input row oy·stride-pad+kh lies inside the image.
func (g convGeom) validRows(kh int) (lo, hi int) {
	if d := g.pad - kh; d > 0 {
		lo = (d + g.stride - 1) / g.stride
	}
	last := g.h - 1 + g.pad - kh
	if last >= 0 {
		hi = min(last/g.stride+1, g.oh)
	}
	return min(lo, hi), hi
}

// shiftedBlock returns, for a same-padding or phased convolution, the offset from an output position to its
// position in the source plane (the image, or one of its polyphase planes, of size positions) for kernel
// offset (kh, kw), and the range [lo, hi) of output positions to move as one block: the valid rows, clipped
// so that the source positions stay inside the plane (lo == hi when nothing is valid). Positions of the block
// in invalid columns wrap to a neighbouring row and must be cleared separately.
func (g convGeom) shiftedBlock(kh, kw int) (shift, lo, hi int) {
	shift, size := (kh-g.pad)*g.w+(kw-g.pad), g.h*g.w
	if g.phased() {
		_, dy := phaseOf(kh-g.pad, g.stride)
		_, dx := phaseOf(kw-g.pad, g.stride)
		shift, size = dy*g.ow+dx, g.oh*g.ow
	}
	rowLo, rowHi := g.validRows(kh)
	lo = max(rowLo*g.ow, -shift)
	hi = min(rowHi*g.ow, size-shift)
	if hi <= lo {
		return shift, rowLo * g.ow, rowLo * g.ow
	}
	return shift, lo, hi
}

// phaseOf splits an input offset r (kernel offset less padding) as r = d·stride + p with 0 <= p < stride: input
// index i·stride+r is element i+d of polyphase p.
func phaseOf(r, stride int) (p, d int) {
	p = ((r % stride) + stride) % stride
	return p, (r - p) / stride
}

// convTap is the geometry of one kernel offset (kh, kw), computed once per run because its integer
// divisions would otherwise be repeated for every image and channel.
type convTap struct {
	kh, kw                  int
	rowLo, rowHi            int // validRows(kh)
	first, last             int // validCols(kw)
	shift, blockLo, blockHi int // shiftedBlock(kh, kw), for same-padding and phased convolutions
	phase                   int // py·stride+px, the polyphase plane of a phased convolution it reads
}

// taps returns the convTaps of all kernel offsets, indexed kh·K+kw, the order of the patch-matrix rows of
// one channel.
func (g convGeom) taps() []convTap {
	taps := make([]convTap, 0, g.k*g.k)
	for kh := 0; kh < g.k; kh++ {
		for kw := 0; kw < g.k; kw++ {
			t := convTap{kh: kh, kw: kw}
			t.rowLo, t.rowHi = g.validRows(kh)
			t.first, t.last = g.validCols(kw)
			if g.samePadding() || g.phased() {
				t.shift, t.blockLo, t.blockHi = g.shiftedBlock(kh, kw)
			}
			if g.phased() {
				py, _ := phaseOf(kh-g.pad, g.stride)
				px, _ := phaseOf(kw-g.pad, g.stride)
				t.phase = py*g.stride + px
			}
			taps = append(taps, t)
		}
	}
	return taps
}

// im2colShifted writes one patch-matrix row of one image for a same-padding convolution: one block copy,
// then zeros in the invalid rows and columns.
func im2colShifted[T float](g convGeom, plane, dst []T, t convTap) {
	clear(dst[:t.blockLo])
	clear(dst[t.blockHi:])
	if t.blockLo < t.blockHi {
		copy(dst[t.blockLo:t.blockHi], plane[t.blockLo+t.shift:t.blockHi+t.shift])
	}
	for oy := t.rowLo; oy < t.rowHi; oy++ {
		clearEdges(dst[oy*g.ow:(oy+1)*g.ow], t.first, t.last)
	}
}

// im2colRows writes one patch-matrix row of one image, one output row at a time.
func im2colRows[T float](g convGeom, plane, dst []T, t convTap) {
	kh, first, last := t.kh, t.first, t.last
	shift := t.kw - g.pad
	for oy := 0; oy < g.oh; oy++ {
		d := dst[oy*g.ow : (oy+1)*g.ow]
		iy := oy*g.stride - g.pad + kh
		if iy < 0 || iy >= g.h {
			clear(d)
			continue
		}
		src := plane[iy*g.w : (iy+1)*g.w]
		clear(d[:first])
		clear(d[last:])
		if g.stride == 1 {
			copy(d[first:last], src[first+shift:])
			continue
		}
		for ox := first; ox < last; ox++ {
			d[ox] = src[ox*g.stride+shift]
		}
	}
}

// col2im is the adjoint of im2col: it sums every entry of the patch-matrix gradient dcol [C·K·K, count·P] into
// the position of images first..first+count-1 of dx it was copied from. For same-padding convolutions with
// an odd kernel, the centre tap covers every position with shift 0, so it initialises the plane by a copy;
// the other rows are added as one block each after their invalid columns are cleared in dcol, which is
// scratch space. A phased convolution adds its rows as blocks into the polyphase planes, which are then
// merged into the plane; each position receives the same additions in the same order as on the other paths.
func col2im[T float](g convGeom, taps []convTap, dcol, dx []T, first, count int) {
	p, hw := g.outPlane(), g.inPlane()
	cols := count * p
	centre := -1
	if g.samePadding() && g.k%2 == 1 {
		centre = g.pad*g.k + g.pad
	}
	var phases []T
	if g.phased() {
		phases = scratchOf[T]().get(g.stride * g.stride * p)
		defer scratchOf[T]().put(phases)
	}
	for i := 0; i < count; i++ {
		for c := 0; c < g.c; c++ {
			plane := dx[((first+i)*g.c+c)*hw : ((first+i)*g.c+c+1)*hw]
			switch {
			case phases != nil:
				clear(phases)
			case centre >= 0:
				row := c*g.k*g.k + centre
				copy(plane, dcol[row*cols+i*p:row*cols+(i+1)*p])
			default:
				clear(plane)
			}
			for t, tap := range taps {
				row := c*g.k*g.k + t
				src := dcol[row*cols+i*p : row*cols+(i+1)*p]
				switch {
				case t == centre:
				case phases != nil:
					col2imShifted(g, src, phases[tap.phase*p:(tap.phase+1)*p], tap)
				case g.samePadding():
					col2imShifted(g, src, plane, tap)
				default:
					col2imRows(g, src, plane, tap)
				}
			}
			if phases != nil {
				mergePhases(g, phases, plane)
			}
		}
	}
}

func col2imShifted[T float](g convGeom, src, plane []T, t convTap) {
	for oy := t.rowLo; oy < t.rowHi; oy++ {
		clearEdges(src[oy*g.ow:(oy+1)*g.ow], t.first, t.last)
	}
	if t.blockLo < t.blockHi {
		addTo(plane[t.blockLo+t.shift:t.blockHi+t.shift], src[t.blockLo:t.blockHi])
	}
}

func col2imRows[T float](g convGeom, src, plane []T, t convTap) {
	kh, first, last := t.kh, t.first, t.last
	shift := t.kw - g.pad
	for oy := 0; oy < g.oh; oy++ {
		iy := oy*g.stride - g.pad + kh
		if iy < 0 || iy >= g.h {
			continue
		}
		s := src[oy*g.ow : (oy+1)*g.ow]
		d := plane[iy*g.w : (iy+1)*g.w]
		if g.stride == 1 {
			dd := d[first+shift : last+shift]
			for j, v := range s[first:last] {
				dd[j] += v
			}
			continue
		}
		for ox := first; ox < last; ox++ {
			d[ox*g.stride+shift] += s[ox]
		}
	}
}

// toChannelMajor regroups src [N, C, P] as dst [C, N·P].
func toChannelMajor[T float](src, dst []T, n, c, p int) {
	for i := 0; i < n; i++ {
		for ch := 0; ch < c; ch++ {
			copy(dst[(ch*n+i)*p:(ch*n+i+1)*p], src[(i*c+ch)*p:(i*c+ch+1)*p])
		}
	}
}

// fromChannelMajor regroups src [C, N·P] as dst [N, C, P].
func fromChannelMajor[T float](src, dst []T, n, c, p int) {
	for i := 0; i < n; i++ {
		for ch := 0; ch < c; ch++ {
			copy(dst[(i*c+ch)*p:(i*c+ch+1)*p], src[(ch*n+i)*p:(ch*n+i+1)*p])
		}
	}
}

// convFilterGradOp computes dw [O, C·K·K] = Σ_chunks dyᵀ [O, images·P] · im2col(x)ᵀ from x and dy
// [N,O,H',W']. Each goroutine sums its chunks into its own partial gradient, kept transposed, and the
// partials are transposed into dw and added in goroutine order.
type convFilterGradOp struct {
	plainOp
	geo    convGeom
	serial uint64
	out    buffer
}

func (op *convFilterGradOp) Arity() int { return 2 }
func (op *convFilterGradOp) Type() hm.Type {
	return hm.NewFnType(tensorType(4), tensorType(4), tensorType(4))
}
func (op *convFilterGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.geo.filterShape(), nil
}
func (op *convFilterGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *convFilterGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *convFilterGradOp) String() string        { return fmt.Sprintf("Conv2dFilterGrad#%d", op.serial) }

func (op *convFilterGradOp) Do(vals ...G.Value) (G.Value, error) {
	if profileLabels.Load() {
		defer labelOp(fmt.Sprintf("%v{%v}", op, op.geo))()
	}
	g := op.geo
	x, err := denseOf("conv2d filter gradient", 0, vals[0], vals[0].Dtype(), g.inShape())
	if err != nil {
		return nil, err
	}
	dy, err := denseOf("conv2d filter gradient", 1, vals[1], x.Dtype(), g.outShape())
	if err != nil {
		return nil, err
	}
	dw := op.out.get(x.Dtype(), g.filterShape()...)
	switch x.Dtype() {
	case tensor.Float32:
		convFilterGrad(g, x.Float32s(), dy.Float32s(), dw.Float32s())
	case tensor.Float64:
		convFilterGrad(g, x.Float64s(), dy.Float64s(), dw.Float64s())
	default:
		return nil, fmt.Errorf("conv2d filter gradient: dtype %v: %w", x.Dtype(), ErrShape)
	}
	return dw, nil
}

// convFilterGrad computes dw from x and dy, by Winograd for the 3x3 convolutions it suits (see
// convGeom.winograd), else by im2colFilterGrad.
func convFilterGrad[T float](g convGeom, x, dy, dw []T) {
	convPath(g, winogradFilterGrad[T], im2colFilterGrad[T])(g, x, dy, dw)
}

// im2colFilterGrad computes each goroutine's partial gradient transposed, dwᵀ [C·K·K, O] = im2col(x) · dyᵀ:
// OpenBLAS multiplies this orientation, with the long side C·K·K as rows, 10-45% faster per operation than
// dy · im2col(x)ᵀ when O is 64-128 (measured on the 2-core AMD EPYC with AVX-512: 92 against 63 GFLOP per
// CPU-second for O = 64, C·K·K = 576 over 1024 positions), and no slower for wider layers.
func im2colFilterGrad[T float](g convGeom, x, dy, dw []T) {
	taps := g.taps()
	ch := g.chunking()
	pool := scratchOf[T]()
	cols := ch.images * g.outPlane()
	pk := g.patch()
	partials := make([][]T, ch.workers)
	for w := range partials {
		partials[w] = pool.get(len(dw))
	}
	used := make([]bool, ch.workers)
	parallelRanges(ch.chunks, ch.workers, func(worker, lo, hi int) {
		col, dyBuf := pool.get(pk*cols), pool.get(g.o*cols)
		defer pool.put(col, dyBuf)
		for i := lo; i < hi; i++ {
			first, count := ch.span(g, i)
			n := count * g.outPlane()
			pm := patches(g, taps, x, col, first, count)
			dyT := channelMajor(g, dy, dyBuf, first, count)
			var beta T
			if i > lo {
				beta = 1
			}
			gemm(ch.gemmThreads, false, true, pk, g.o, n, pm, n, dyT, n, beta, partials[worker], g.o)
		}
		used[worker] = hi > lo
	})
	var sums [][]T
	for w, p := range partials {
		if used[w] {
			sums = append(sums, p)
		}
	}
	parallelUnits((g.o+transposeTile-1)/transposeTile, Threads(), func(i int) {
		sumTransposed(dw, sums, i*transposeTile, min((i+1)*transposeTile, g.o), pk, g.o)
	})
	for _, p := range partials {
		pool.put(p)
	}
}

// transposeTile is the number of rows sumTransposed writes together.
const transposeTile = 32

// sumTransposed writes rows lo..hi-1 of the transpose of the sum of srcs [cols, rows], added in order, to dst
// [rows, cols] (zeros without srcs), in tiles of transposeTile rows that stay in cache; the inner loop reads
// srcs contiguously. Each element is its own sum: the rows may be split anywhere.
func sumTransposed[T float](dst []T, srcs [][]T, lo, hi, cols, rows int) {
	for r0 := lo; r0 < hi; r0 += transposeTile {
		r1 := min(r0+transposeTile, hi)
		for c := 0; c < cols; c++ {
			switch len(srcs) {
			case 0:
				for r := r0; r < r1; r++ {
					dst[r*cols+c] = 0
				}
			case 1:
				for r, v := range srcs[0][c*rows+r0 : c*rows+r1] {
					dst[(r0+r)*cols+c] = v
				}
			default:
				for r := r0; r < r1; r++ {
					var v T
					for _, src := range srcs {
						v += src[c*rows+r]
					}
					dst[r*cols+c] = v
				}
			}
		}
	}
}

// convInputGradOp computes dx = col2im(wᵀ [C·K·K, O] · dyᵀ [O, images·P]) chunk by chunk from w and dy
// [N,O,H',W'].
type convInputGradOp struct {
	plainOp
	geo    convGeom
	serial uint64
	out    buffer
}

func (op *convInputGradOp) Arity() int { return 2 }
func (op *convInputGradOp) Type() hm.Type {
	return hm.NewFnType(tensorType(4), tensorType(4), tensorType(4))
}
func (op *convInputGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.geo.inShape(), nil
}
func (op *convInputGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *convInputGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *convInputGradOp) String() string        { return fmt.Sprintf("Conv2dInputGrad#%d", op.serial) }

func (op *convInputGradOp) Do(vals ...G.Value) (G.Value, error) {
	if profileLabels.Load() {
		defer labelOp(fmt.Sprintf("%v{%v}", op, op.geo))()
	}
	g := op.geo
	w, err := denseOf("conv2d input gradient", 0, vals[0], vals[0].Dtype(), g.filterShape())
	if err != nil {
		return nil, err
	}
	dy, err := denseOf("conv2d input gradient", 1, vals[1], w.Dtype(), g.outShape())
	if err != nil {
		return nil, err
	}
	dt := w.Dtype()
	dx := op.out.get(dt, g.inShape()...)
	switch dt {
	case tensor.Float32:
		convInputGrad(g, w.Float32s(), dy.Float32s(), dx.Float32s())
	case tensor.Float64:
		convInputGrad(g, w.Float64s(), dy.Float64s(), dx.Float64s())
	default:
		return nil, fmt.Errorf("conv2d input gradient: dtype %v: %w", dt, ErrShape)
	}
	return dx, nil
}

// convInputGrad computes dx from w and dy, by Winograd for the 3x3 convolutions it suits (see
// convGeom.winograd), else by im2colInputGrad.
func convInputGrad[T float](g convGeom, w, dy, dx []T) {
	convPath(g, winogradInputGrad[T], im2colInputGrad[T])(g, w, dy, dx)
}

// im2colInputGrad computes dx chunk by chunk; for a pointwise convolution the product is the gradient itself,
// written to dx directly for a chunk of one image.
func im2colInputGrad[T float](g convGeom, w, dy, dx []T) {
	taps := g.taps()
	ch := g.chunking()
	pool := scratchOf[T]()
	cols := ch.images * g.outPlane()
	pk := g.patch()
	parallelEach(ch.chunks, ch.workers, func() (func(int), func()) {
		dcol, dyBuf := pool.get(pk*cols), pool.get(g.o*cols)
		return func(i int) {
			first, count := ch.span(g, i)
			n := count * g.outPlane()
			dyT := channelMajor(g, dy, dyBuf, first, count)
			if g.pointwise() {
				hw := g.c * g.inPlane()
				out := dx[first*hw : (first+count)*hw]
				if count == 1 {
					gemm(ch.gemmThreads, true, false, pk, n, g.o, w, pk, dyT, n, 0, out, n)
					return
				}
				gemm(ch.gemmThreads, true, false, pk, n, g.o, w, pk, dyT, n, 0, dcol, n)
				fromChannelMajor(dcol, out, count, g.c, g.inPlane())
				return
			}
			gemm(ch.gemmThreads, true, false, pk, n, g.o, w, pk, dyT, n, 0, dcol, n)
			col2im(g, taps, dcol, dx, first, count)
		}, func() { pool.put(dcol, dyBuf) }
	})
}
