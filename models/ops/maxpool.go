package ops

import (
	"fmt"
	"hash"
	"math"

	"github.com/bicyc/bicyc/models/ops/internal/vector"
	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MaxPool returns the maximum of each k x k window with the given stride and padding, as PyTorch's
// nn.MaxPool2d(k, stride, pad) computes it (ceil_mode off, padding never wins):
//
//	y[n,c,i,j] = max over 0 <= a,b < k with the position inside x of x[n,c, i·stride+a-pad, j·stride+b-pad]
//
// x is [N,C,H,W], y is [N,C,H',W'] with H' = (H+2·pad-k)/stride+1 and the same for W'. pad must be at most k/2
// (PyTorch's rule), so every window holds at least one position of x. The gradient goes to the first maximum of
// each window in row-major order (float32 ranks -0 below +0). ImageNet ResNets use k=3, stride 2, pad 1 after
// their stem. NaNs are not supported. It returns an error wrapping ErrShape for other shapes, an empty output
// or a bad geometry.
func MaxPool(x *G.Node, k, stride, pad int) (*G.Node, error) {
	xs := x.Shape()
	if k < 1 || stride < 1 || pad < 0 || 2*pad > k {
		return nil, fmt.Errorf("max pool: kernel %d, stride %d, pad %d: want kernel, stride >= 1 and 0 <= pad <= kernel/2: %w", k, stride, pad, ErrShape)
	}
	if xs.Dims() != 4 || xs.TotalSize() == 0 || xs[2]+2*pad < k || xs[3]+2*pad < k {
		return nil, fmt.Errorf("max pool %dx%d: input %q has shape %v, want [N,C,H,W] with H, W >= %d: %w", k, k, x.Name(), xs, k-2*pad, ErrShape)
	}
	if err := checkFloat("max pool", x); err != nil {
		return nil, err
	}
	geo := poolGeom{shape: xs.Clone(), k: k, stride: stride, pad: pad}
	geo.oh, geo.ow = (xs[2]+2*pad-k)/stride+1, (xs[3]+2*pad-k)/stride+1
	return G.ApplyOp(&maxPoolKOp{geo: geo, serial: opSerial.Add(1)}, x)
}

// poolGeom is the geometry of one max pooling: input shape [N,C,H,W], window k, output plane oh x ow.
type poolGeom struct {
	shape          tensor.Shape
	k, stride, pad int
	oh, ow         int
}

func (g poolGeom) outShape() tensor.Shape { return tensor.Shape{g.shape[0], g.shape[1], g.oh, g.ow} }
func (g poolGeom) planes() int            { return g.shape[0] * g.shape[1] }
func (g poolGeom) inPlane() int           { return g.shape[2] * g.shape[3] }
func (g poolGeom) outPlane() int          { return g.oh * g.ow }

// window returns the clipped input range [lo, hi) of output index o along a side of size n.
func (g poolGeom) window(o, n int) (lo, hi int) {
	lo = o*g.stride - g.pad
	return max(lo, 0), min(lo+g.k, n)
}

// maxPoolKOp is the k x k max pooling; for each output it keeps the index within its input plane of the
// window's maximum, for maxPoolKGradOp in the same run.
type maxPoolKOp struct {
	plainOp
	geo    poolGeom
	serial uint64
	argmax []int32
	out    buffer
}

func (op *maxPoolKOp) Arity() int    { return 1 }
func (op *maxPoolKOp) Type() hm.Type { return hm.NewFnType(tensorType(4), tensorType(4)) }
func (op *maxPoolKOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.geo.outShape(), nil
}
func (op *maxPoolKOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *maxPoolKOp) Hashcode() uint32      { return hashOf(op) }
func (op *maxPoolKOp) String() string {
	return fmt.Sprintf("MaxPool#%d%v{k%d s%d p%d}", op.serial, op.geo.shape, op.geo.k, op.geo.stride, op.geo.pad)
}

func (op *maxPoolKOp) DiffWRT(int) []bool { return []bool{true} }
func (op *maxPoolKOp) SymDiff(_ G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	dx, err := G.ApplyOp(&maxPoolKGradOp{fwd: op}, grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx}, nil
}

func (op *maxPoolKOp) Do(vals ...G.Value) (G.Value, error) {
	if profileLabels.Load() {
		defer labelOp(op.String())()
	}
	x, err := denseOf("max pool", 0, vals[0], vals[0].Dtype(), op.geo.shape)
	if err != nil {
		return nil, err
	}
	y := op.out.get(x.Dtype(), op.geo.outShape()...)
	if op.argmax == nil {
		op.argmax = make([]int32, y.DataSize())
	}
	switch x.Dtype() {
	case tensor.Float32:
		maxPoolK(op.geo, x.Float32s(), y.Float32s(), op.argmax)
	case tensor.Float64:
		maxPoolK(op.geo, x.Float64s(), y.Float64s(), op.argmax)
	default:
		return nil, fmt.Errorf("max pool: dtype %v: %w", x.Dtype(), ErrShape)
	}
	return y, nil
}

// maxPoolK pools every input plane of x into y, recording each winner's index within its plane; planes are
// split across goroutines. float32 planes take a branch-free path (see maxPoolKFloat32).
func maxPoolK[T float](g poolGeom, x, y []T, argmax []int32) {
	h, w := g.shape[2], g.shape[3]
	in, out := g.inPlane(), g.outPlane()
	x32, isFloat32 := any(x).([]float32)
	parallelFor(g.planes(), 1+8192/in, func(lo, hi int) {
		if isFloat32 {
			maxPoolKFloat32(g, x32[lo*in:hi*in], any(y).([]float32)[lo*out:hi*out], argmax[lo*out:hi*out])
			return
		}
		for pl := lo; pl < hi; pl++ {
			src, dst, arg := x[pl*in:(pl+1)*in], y[pl*out:(pl+1)*out], argmax[pl*out:(pl+1)*out]
			for i := 0; i < g.oh; i++ {
				r0, r1 := g.window(i, h)
				for j := 0; j < g.ow; j++ {
					c0, c1 := g.window(j, w)
					at := r0*w + c0
					best := src[at]
					for r := r0; r < r1; r++ {
						for c, v := range src[r*w+c0 : r*w+c1] {
							if v > best {
								best, at = v, r*w+c0+c
							}
						}
					}
					dst[i*g.ow+j], arg[i*g.ow+j] = best, int32(at)
				}
			}
		}
	})
}

// maxPoolKFloat32 is maxPoolK for whole float32 planes, in two passes without a branch per value (the
// winners of ReLU outputs, half of them tied at zero, are unpredictable: for the ImageNet stem's pooling at
// batch 16 the direct loop took 60 ms, BenchmarkMaxPool3x3): first the maximum of each output column's
// window along every input row, with its column (rowWindows), then the maximum of those along each
// output row's window of rows. Values compare as orderedKeys, and the first maximum in row-major order wins
// as in the direct loop: the first in its row, then the first row holding it. Where the processor runs the
// assembly kernels, the merge of rows is vector.KeepFirstMax.
func maxPoolKFloat32(g poolGeom, x, y []float32, argmax []int32) {
	h, w := g.shape[2], g.shape[3]
	in, out := g.inPlane(), g.outPlane()
	rw := newRowWindows(g, w)
	rows := windows(g, g.oh, h)
	rowKeys, rowAt, best := make([]int32, h*g.ow), make([]int32, h*g.ow), make([]int32, g.ow)
	for pl := range len(x) / in {
		src, dst, arg := x[pl*in:(pl+1)*in], y[pl*out:(pl+1)*out], argmax[pl*out:(pl+1)*out]
		for r := range h {
			rw.pool(rowKeys[r*g.ow:(r+1)*g.ow], rowAt[r*g.ow:(r+1)*g.ow], src[r*w:(r+1)*w], int32(r*w))
		}
		for i, win := range rows {
			r0 := int(win[0])
			d, a := dst[i*g.ow:(i+1)*g.ow], arg[i*g.ow:(i+1)*g.ow]
			copy(best, rowKeys[r0*g.ow:(r0+1)*g.ow])
			copy(a, rowAt[r0*g.ow:(r0+1)*g.ow])
			for r := r0 + 1; r < int(win[1]); r++ {
				keys, at := rowKeys[r*g.ow:(r+1)*g.ow], rowAt[r*g.ow:(r+1)*g.ow]
				if vector.HasAVX2 && len(best) >= 8 {
					vector.KeepFirstMax(best, a, keys, at)
					continue
				}
				for j := range best {
					best[j], a[j] = keepFirstMax(best[j], a[j], keys[j], at[j])
				}
			}
			for j, k := range best {
				d[j] = math.Float32frombits(uint32(orderedKey(math.Float32frombits(uint32(k))))) // orderedKey is its own inverse
			}
		}
	}
}

// rowWindows pools one input row over the column windows of a k x k max pooling: the first pass of
// maxPoolKFloat32.
type rowWindows struct {
	cols [][2]int32 // each output column's input columns [lo, hi)
	keys []int32    // the row's orderedKeys, scratch
	// vectorFrom, vectorTo delimit the windows the assembly kernel vector.MaxPoolWindows3s2 pools (3x3,
	// stride 2, pad 1, the ImageNet stem's pooling, on a processor that runs it); empty otherwise. They
	// leave out the first window, clipped by the padding, and the last ones, whose kernel reads would pass
	// the row's end.
	vectorFrom, vectorTo int
}

func newRowWindows(g poolGeom, w int) *rowWindows {
	rw := &rowWindows{cols: windows(g, g.ow, w), keys: make([]int32, w)}
	if g.k == 3 && g.stride == 2 && g.pad == 1 && vector.HasAVX2 {
		// Window j reads columns 2j-1 .. 2j+2 in the kernel: 2j+2 < w.
		if to := (w-3)/2 + 1; to-1 >= 8 {
			rw.vectorFrom, rw.vectorTo = 1, to
		}
	}
	return rw
}

// pool writes each window's maximum key and its index (base + column) into keys and at.
func (rw *rowWindows) pool(keys, at []int32, row []float32, base int32) {
	if rw.vectorTo > rw.vectorFrom {
		lo, hi := rw.vectorFrom, rw.vectorTo
		vector.MaxPoolWindows3s2(keys[lo:hi], at[lo:hi], row[2*lo-1:], base+int32(2*lo-1))
		rw.poolScalar(keys, at, row, base, 0, lo)
		rw.poolScalar(keys, at, row, base, hi, len(keys))
		return
	}
	rw.poolScalar(keys, at, row, base, 0, len(keys))
}

// poolScalar is pool for the windows [from, to).
func (rw *rowWindows) poolScalar(keys, at []int32, row []float32, base int32, from, to int) {
	if from >= to {
		return
	}
	lo, hi := rw.cols[from][0], rw.cols[to-1][1]
	for c := lo; c < hi; c++ {
		rw.keys[c] = orderedKey(row[c])
	}
	for j, win := range rw.cols[from:to] {
		top, col := rw.keys[win[0]], win[0]
		for c := win[0] + 1; c < win[1]; c++ {
			top, col = keepFirstMax(top, col, rw.keys[c], c)
		}
		keys[from+j], at[from+j] = top, base+col
	}
}

// windows returns the clipped input range [lo, hi) of each of n outputs along a side of size size.
func windows(g poolGeom, n, size int) [][2]int32 {
	w := make([][2]int32, n)
	for o := range w {
		lo, hi := g.window(o, size)
		w[o] = [2]int32{int32(lo), int32(hi)}
	}
	return w
}

// keepFirstMax returns (key, at) if key is above best, else (best, bestAt), without a branch (the int64
// difference of two int32 keys cannot overflow).
func keepFirstMax(best, bestAt, key, at int32) (int32, int32) {
	above := int32(uint64(int64(best)-int64(key)) >> 63)
	return max(best, key), bestAt ^ (bestAt^at)&-above
}

// maxPoolKGradOp adds each output gradient to the input position its forward op recorded; windows overlap
// when stride < k, so a position can receive several.
type maxPoolKGradOp struct {
	plainOp
	fwd *maxPoolKOp
	out buffer
}

func (op *maxPoolKGradOp) Arity() int    { return 1 }
func (op *maxPoolKGradOp) Type() hm.Type { return hm.NewFnType(tensorType(4), tensorType(4)) }
func (op *maxPoolKGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.fwd.geo.shape.Clone(), nil
}
func (op *maxPoolKGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *maxPoolKGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *maxPoolKGradOp) String() string        { return fmt.Sprintf("MaxPoolGrad#%d", op.fwd.serial) }

func (op *maxPoolKGradOp) Do(vals ...G.Value) (G.Value, error) {
	if profileLabels.Load() {
		defer labelOp(op.fwd.String() + " gradient")()
	}
	g := op.fwd.geo
	dy, err := denseOf("max pool gradient", 0, vals[0], vals[0].Dtype(), g.outShape())
	if err != nil {
		return nil, err
	}
	if op.fwd.argmax == nil {
		return nil, fmt.Errorf("max pool gradient: %v ran before its forward pass", op)
	}
	dx := op.out.get(dy.Dtype(), g.shape...)
	switch dy.Dtype() {
	case tensor.Float32:
		maxPoolKGrad(g, dy.Float32s(), dx.Float32s(), op.fwd.argmax)
	case tensor.Float64:
		maxPoolKGrad(g, dy.Float64s(), dx.Float64s(), op.fwd.argmax)
	default:
		return nil, fmt.Errorf("max pool gradient: dtype %v: %w", dy.Dtype(), ErrShape)
	}
	return dx, nil
}

func maxPoolKGrad[T float](g poolGeom, dy, dx []T, argmax []int32) {
	in, out := g.inPlane(), g.outPlane()
	parallelFor(g.planes(), 1+8192/in, func(lo, hi int) {
		clear(dx[lo*in : hi*in])
		for pl := lo; pl < hi; pl++ {
			plane := dx[pl*in : (pl+1)*in]
			for o, v := range dy[pl*out : (pl+1)*out] {
				plane[argmax[pl*out+o]] += v
			}
		}
	})
}
