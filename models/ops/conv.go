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
// The forward pass lays the patches of the whole batch out as a [C·K·K, N·H'·W'] matrix (im2col, split over
// images across goroutines; a 1x1 convolution with stride 1 and no padding only regroups x by channel) and
// computes all outputs with one matrix product through the registered BLAS. The backward pass uses one matrix
// product for the filter gradient and one, followed by the parallel inverse of im2col, for the input
// gradient. The patch matrix is kept from the forward pass for the filter gradient.
//
// When x is a leaf of the graph (an input such as the batch of images, or a parameter), the gradient with
// respect to x is not built: a network's input images never need one, and it would cost a matrix product
// and a col2im over the whole batch in every step. G.Grad then reports x as not differentiable; to
// differentiate with respect to such an x, pass it through an op first (for example G.Add(x, zero)).
func Conv2d(x, w *G.Node, stride, pad int) (*G.Node, error) {
	if err := checkConvShapes(x, w, stride, pad); err != nil {
		return nil, err
	}
	xs, ws := x.Shape(), w.Shape()
	geo := convGeom{n: xs[0], c: xs[1], h: xs[2], w: xs[3], o: ws[0], k: ws[2], stride: stride, pad: pad}
	geo.oh = (geo.h+2*pad-geo.k)/stride + 1
	geo.ow = (geo.w+2*pad-geo.k)/stride + 1
	return G.ApplyOp(&convOp{geo: geo, serial: opSerial.Add(1), inputGrad: x.Op() != nil}, x, w)
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

// patch is the size of one column of the patch matrix, C·K·K; positions is its number of columns, N·H'·W'.
func (g convGeom) patch() int     { return g.c * g.k * g.k }
func (g convGeom) positions() int { return g.n * g.oh * g.ow }

// samePadding reports a stride-1 convolution whose output has the input's size: then every patch-matrix row is
// the image shifted by a constant offset, copied as one block.
func (g convGeom) samePadding() bool { return g.stride == 1 && g.oh == g.h && g.ow == g.w }

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

// convOp is the forward convolution. It keeps the patch matrix of the last run for convFilterGradOp.
type convOp struct {
	plainOp
	geo       convGeom
	serial    uint64
	inputGrad bool   // build the gradient with respect to x (false when x is a leaf node)
	col       buffer // [C·K·K, N·H'·W'] patch matrix
	prod      buffer // [O, N·H'·W'] product before regrouping by image
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
	dyT, err := G.ApplyOp(&channelMajorOp{geo: op.geo, serial: op.serial}, grad)
	if err != nil {
		return nil, err
	}
	var dx *G.Node
	if op.inputGrad {
		if dx, err = G.ApplyOp(&convInputGradOp{geo: op.geo, serial: op.serial}, in[1], dyT); err != nil {
			return nil, err
		}
	}
	dw, err := G.ApplyOp(&convFilterGradOp{fwd: op}, dyT)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx, dw}, nil
}

func (op *convOp) Do(vals ...G.Value) (G.Value, error) {
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
	col := op.col.get(dt, g.patch(), g.positions())
	prod := op.prod.get(dt, g.o, g.positions())
	y := op.out.get(dt, g.outShape()...)
	switch dt {
	case tensor.Float32:
		convForward(g, x.Float32s(), w.Float32s(), col.Float32s(), prod.Float32s(), y.Float32s())
	case tensor.Float64:
		convForward(g, x.Float64s(), w.Float64s(), col.Float64s(), prod.Float64s(), y.Float64s())
	default:
		return nil, fmt.Errorf("conv2d: dtype %v: %w", dt, ErrShape)
	}
	return y, nil
}

// convForward computes y = w · im2col(x), regrouped from [O, N·P] to [N, O, P].
func convForward[T float](g convGeom, x, w, col, prod, y []T) {
	if g.pointwise() {
		toChannelMajor(x, col, g.n, g.c, g.h*g.w)
	} else {
		im2col(g, x, col)
	}
	np := g.positions()
	gemm(false, false, g.o, np, g.patch(), w, g.patch(), col, np, 0, prod, np)
	fromChannelMajor(prod, y, g.n, g.o, g.oh*g.ow)
}

// im2col writes the patch matrix of x: row (c·K+kh)·K+kw, column n·P+oy·W'+ox holds
// x[n, c, oy·stride-pad+kh, ox·stride-pad+kw], or 0 outside the image. Images are split across goroutines.
func im2col[T float](g convGeom, x, col []T) {
	p, np, hw := g.oh*g.ow, g.positions(), g.h*g.w
	taps := g.taps()
	parallelFor(g.n, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			for c := 0; c < g.c; c++ {
				plane := x[(i*g.c+c)*hw : (i*g.c+c+1)*hw]
				for kh := 0; kh < g.k; kh++ {
					for kw := 0; kw < g.k; kw++ {
						row := (c*g.k+kh)*g.k + kw
						dst := col[row*np+i*p : row*np+(i+1)*p]
						if g.samePadding() {
							im2colShifted(g, plane, dst, taps[kh*g.k+kw])
						} else {
							im2colRows(g, plane, dst, taps[kh*g.k+kw])
						}
					}
				}
			}
		}
	})
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

// shiftedBlock returns, for a same-padding convolution, the offset from an output position to its input
// position for kernel offset (kh, kw), and the range [lo, hi) of output positions to move as one block:
// the valid rows, clipped so that the input positions stay inside the image (lo == hi when nothing is
// valid). Positions of the block in invalid columns wrap to a neighbouring row and must be cleared separately.
func (g convGeom) shiftedBlock(kh, kw int) (shift, lo, hi int) {
	shift = (kh-g.pad)*g.w + (kw - g.pad)
	rowLo, rowHi := g.validRows(kh)
	lo = max(rowLo*g.ow, -shift)
	hi = min(rowHi*g.ow, g.h*g.w-shift)
	if hi <= lo {
		return shift, rowLo * g.ow, rowLo * g.ow
	}
	return shift, lo, hi
}

// convTap is the geometry of one kernel offset (kh, kw), computed once per run because its integer
// divisions would otherwise be repeated for every image and channel.
type convTap struct {
	kh, kw                  int
	rowLo, rowHi            int // validRows(kh)
	first, last             int // validCols(kw)
	shift, blockLo, blockHi int // shiftedBlock(kh, kw), for same-padding convolutions
}

// taps returns the convTaps of all kernel offsets, indexed kh·K+kw.
func (g convGeom) taps() []convTap {
	taps := make([]convTap, 0, g.k*g.k)
	for kh := 0; kh < g.k; kh++ {
		for kw := 0; kw < g.k; kw++ {
			t := convTap{kh: kh, kw: kw}
			t.rowLo, t.rowHi = g.validRows(kh)
			t.first, t.last = g.validCols(kw)
			if g.samePadding() {
				t.shift, t.blockLo, t.blockHi = g.shiftedBlock(kh, kw)
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

// col2im is the adjoint of im2col: it sums every entry of the patch-matrix gradient dcol into the input
// position it was copied from. Images are split across goroutines, each writing only its own image of dx.
// For same-padding convolutions with an odd kernel, the centre tap covers every position with shift 0, so it
// initialises the plane by a copy; the other rows are added as one block each after their invalid columns
// are cleared in dcol, which is scratch space.
func col2im[T float](g convGeom, dcol, dx []T) {
	p, np, hw := g.oh*g.ow, g.positions(), g.h*g.w
	taps := g.taps()
	centre := -1
	if g.samePadding() && g.k%2 == 1 {
		centre = g.pad
	}
	parallelFor(g.n, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			for c := 0; c < g.c; c++ {
				plane := dx[(i*g.c+c)*hw : (i*g.c+c+1)*hw]
				if centre >= 0 {
					row := (c*g.k+centre)*g.k + centre
					copy(plane, dcol[row*np+i*p:row*np+(i+1)*p])
				} else {
					clear(plane)
				}
				for kh := 0; kh < g.k; kh++ {
					for kw := 0; kw < g.k; kw++ {
						row := (c*g.k+kh)*g.k + kw
						src := dcol[row*np+i*p : row*np+(i+1)*p]
						switch {
						case kh == centre && kw == centre:
						case g.samePadding():
							col2imShifted(g, src, plane, taps[kh*g.k+kw])
						default:
							col2imRows(g, src, plane, taps[kh*g.k+kw])
						}
					}
				}
			}
		}
	})
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

// toChannelMajor regroups src [N, C, P] as dst [C, N·P], splitting images across goroutines.
func toChannelMajor[T float](src, dst []T, n, c, p int) {
	parallelFor(n, 1+16384/(c*p), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			for ch := 0; ch < c; ch++ {
				copy(dst[(ch*n+i)*p:(ch*n+i+1)*p], src[(i*c+ch)*p:(i*c+ch+1)*p])
			}
		}
	})
}

// fromChannelMajor regroups src [C, N·P] as dst [N, C, P], splitting images across goroutines.
func fromChannelMajor[T float](src, dst []T, n, c, p int) {
	parallelFor(n, 1+16384/(c*p), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			for ch := 0; ch < c; ch++ {
				copy(dst[(i*c+ch)*p:(i*c+ch+1)*p], src[(ch*n+i)*p:(ch*n+i+1)*p])
			}
		}
	})
}

// channelMajorOp regroups the output gradient dy [N,O,H',W'] as [O, N·H'·W'], the layout both gradient
// products read.
type channelMajorOp struct {
	plainOp
	geo    convGeom
	serial uint64
	out    buffer
}

func (op *channelMajorOp) Arity() int    { return 1 }
func (op *channelMajorOp) Type() hm.Type { return hm.NewFnType(tensorType(4), tensorType(2)) }
func (op *channelMajorOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.geo.o, op.geo.positions()}, nil
}
func (op *channelMajorOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *channelMajorOp) Hashcode() uint32      { return hashOf(op) }
func (op *channelMajorOp) String() string        { return fmt.Sprintf("Conv2dGradLayout#%d", op.serial) }

func (op *channelMajorOp) Do(vals ...G.Value) (G.Value, error) {
	g := op.geo
	dy, err := denseOf("conv2d gradient", 0, vals[0], vals[0].Dtype(), g.outShape())
	if err != nil {
		return nil, err
	}
	out := op.out.get(dy.Dtype(), g.o, g.positions())
	switch dy.Dtype() {
	case tensor.Float32:
		toChannelMajor(dy.Float32s(), out.Float32s(), g.n, g.o, g.oh*g.ow)
	case tensor.Float64:
		toChannelMajor(dy.Float64s(), out.Float64s(), g.n, g.o, g.oh*g.ow)
	default:
		return nil, fmt.Errorf("conv2d gradient: dtype %v: %w", dy.Dtype(), ErrShape)
	}
	return out, nil
}

// convFilterGradOp computes dw [O, C·K·K] = dyᵀ [O, N·P] · colᵀ from the patch matrix its forward op kept.
type convFilterGradOp struct {
	plainOp
	fwd *convOp
	out buffer
}

func (op *convFilterGradOp) Arity() int    { return 1 }
func (op *convFilterGradOp) Type() hm.Type { return hm.NewFnType(tensorType(2), tensorType(4)) }
func (op *convFilterGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.fwd.geo.filterShape(), nil
}
func (op *convFilterGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *convFilterGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *convFilterGradOp) String() string        { return fmt.Sprintf("Conv2dFilterGrad#%d", op.fwd.serial) }

func (op *convFilterGradOp) Do(vals ...G.Value) (G.Value, error) {
	g := op.fwd.geo
	dyT, err := denseOf("conv2d filter gradient", 0, vals[0], vals[0].Dtype(), tensor.Shape{g.o, g.positions()})
	if err != nil {
		return nil, err
	}
	col := op.fwd.col.t
	if col == nil || col.Dtype() != dyT.Dtype() {
		return nil, fmt.Errorf("conv2d filter gradient: %v ran before its forward pass", op)
	}
	dw := op.out.get(dyT.Dtype(), g.filterShape()...)
	np, pk := g.positions(), g.patch()
	switch dyT.Dtype() {
	case tensor.Float32:
		gemm(false, true, g.o, pk, np, dyT.Float32s(), np, col.Float32s(), np, 0, dw.Float32s(), pk)
	case tensor.Float64:
		gemm(false, true, g.o, pk, np, dyT.Float64s(), np, col.Float64s(), np, 0, dw.Float64s(), pk)
	default:
		return nil, fmt.Errorf("conv2d filter gradient: dtype %v: %w", dyT.Dtype(), ErrShape)
	}
	return dw, nil
}

// convInputGradOp computes dx = col2im(wᵀ [C·K·K, O] · dyᵀ [O, N·P]).
type convInputGradOp struct {
	plainOp
	geo    convGeom
	serial uint64
	dcol   buffer // [C·K·K, N·P]
	out    buffer
}

func (op *convInputGradOp) Arity() int { return 2 }
func (op *convInputGradOp) Type() hm.Type {
	return hm.NewFnType(tensorType(4), tensorType(2), tensorType(4))
}
func (op *convInputGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.geo.inShape(), nil
}
func (op *convInputGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *convInputGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *convInputGradOp) String() string        { return fmt.Sprintf("Conv2dInputGrad#%d", op.serial) }

func (op *convInputGradOp) Do(vals ...G.Value) (G.Value, error) {
	g := op.geo
	w, err := denseOf("conv2d input gradient", 0, vals[0], vals[0].Dtype(), g.filterShape())
	if err != nil {
		return nil, err
	}
	dyT, err := denseOf("conv2d input gradient", 1, vals[1], w.Dtype(), tensor.Shape{g.o, g.positions()})
	if err != nil {
		return nil, err
	}
	dt := w.Dtype()
	dcol := op.dcol.get(dt, g.patch(), g.positions())
	dx := op.out.get(dt, g.inShape()...)
	switch dt {
	case tensor.Float32:
		convInputGrad(g, w.Float32s(), dyT.Float32s(), dcol.Float32s(), dx.Float32s())
	case tensor.Float64:
		convInputGrad(g, w.Float64s(), dyT.Float64s(), dcol.Float64s(), dx.Float64s())
	default:
		return nil, fmt.Errorf("conv2d input gradient: dtype %v: %w", dt, ErrShape)
	}
	return dx, nil
}

func convInputGrad[T float](g convGeom, w, dyT, dcol, dx []T) {
	np, pk := g.positions(), g.patch()
	gemm(true, false, pk, np, g.o, w, pk, dyT, np, 0, dcol, np)
	if g.pointwise() {
		fromChannelMajor(dcol, dx, g.n, g.c, g.h*g.w)
		return
	}
	col2im(g, dcol, dx)
}
