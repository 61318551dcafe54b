package cudaops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/models/cuda"
	"github.com/bicyc/bicyc/models/ops"
)

// kernelOp is a float32 op whose Do uploads its inputs, runs NVRTC kernels and downloads its output; the
// layers below build one per direction over a state they share.
type kernelOp struct {
	name     string         // "cuda bias add"
	inShapes []tensor.Shape // the inputs' shapes, checked by Do
	out      tensor.Shape
	serial   uint64
	do       func(in []*tensor.Dense) (*tensor.Dense, error)
	diff     func(output, grad *G.Node) (G.Nodes, error) // nil for a gradient op
	diffWRT  []bool
	free     func() error
}

func (op *kernelOp) Arity() int { return len(op.inShapes) }
func (op *kernelOp) Type() hm.Type {
	ts := make([]hm.Type, 0, len(op.inShapes)+1)
	for _, s := range op.inShapes {
		ts = append(ts, tensorType(s.Dims()))
	}
	return hm.NewFnType(append(ts, tensorType(op.out.Dims()))...)
}
func (op *kernelOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.out.Clone(), nil }
func (op *kernelOp) ReturnsPtr() bool                               { return false }
func (op *kernelOp) CallsExtern() bool                              { return false }
func (op *kernelOp) OverwritesInput() int                           { return -1 }
func (op *kernelOp) WriteHash(h hash.Hash)                          { fmt.Fprint(h, op.String()) }
func (op *kernelOp) Hashcode() uint32                               { return hashOf(op) }
func (op *kernelOp) String() string                                 { return fmt.Sprintf("%s#%d%v", op.name, op.serial, op.out) }
func (op *kernelOp) DiffWRT(int) []bool {
	if op.diff == nil {
		return make([]bool, len(op.inShapes))
	}
	return op.diffWRT
}

func (op *kernelOp) SymDiff(_ G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if op.diff == nil {
		return nil, fmt.Errorf("%v: second derivatives are not implemented", op)
	}
	return op.diff(output, grad)
}

func (op *kernelOp) Do(vals ...G.Value) (G.Value, error) {
	in := make([]*tensor.Dense, len(vals))
	for i, v := range vals {
		d, err := denseInput(op.name, i, v, tensor.Float32, op.inShapes[i])
		if err != nil {
			return nil, err
		}
		in[i] = d
	}
	out, err := op.do(in)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.name, err)
	}
	return out, nil
}

func (op *kernelOp) release() error { return op.free() }

// kernelsAndBuffers compiles (once per process) the named kernels and allocates the device tensors, on first use.
func kernelsAndBuffers(names []string, ks []**cuda.Kernel, bufs []*deviceTensor, shapes []tensor.Shape) error {
	if *ks[0] != nil {
		return nil
	}
	r, err := cuda.Open()
	if err != nil {
		return err
	}
	for i, d := range bufs {
		if err := d.alloc(r, tensor.Float32, shapes[i]); err != nil {
			return err
		}
	}
	for i := len(names) - 1; i >= 0; i-- { // the first last: it marks the whole as ready
		if *ks[i], err = kernel(r, names[i]); err != nil {
			return err
		}
	}
	return nil
}

// planes returns N, C and the values per plane S of an [N,C,H,W] or [N,C] shape.
func planes(s tensor.Shape) (n, c, sp int) {
	sp = 1
	for _, d := range s[2:] {
		sp *= d
	}
	return s[0], s[1], sp
}

// AddChannelBias is ops.AddChannelBias computed by NVRTC kernels: y = x + b[c] over channel c of a float32 x
// [N,C,H,W] or [N,C] (kernel channel_affine with a scale of 1), with the gradients dx = dy and db = the sum
// of dy over N, H and W (kernel channel_sum, accumulated in double).
func AddChannelBias(x, b *G.Node) (*G.Node, error) {
	xs, bs := x.Shape(), b.Shape()
	if (xs.Dims() != 2 && xs.Dims() != 4) || x.Dtype() != tensor.Float32 || xs.TotalSize() == 0 {
		return nil, fmt.Errorf("cuda bias add: input %q is %v %v, want float32 [N,C,H,W] or [N,C]: %w", x.Name(), xs, x.Dtype(), ops.ErrShape)
	}
	if bs.Dims() != 1 || bs[0] != xs[1] || b.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("cuda bias add: bias %q is %v %v, want float32 [%d]: %w", b.Name(), bs, b.Dtype(), xs[1], ops.ErrShape)
	}
	var (
		affine, sum     *cuda.Kernel
		dbias, ones, dy deviceTensor
		xd, bd, yd      deviceTensor
		run             uint64
	)
	n, c, sp := planes(xs)
	total := xs.TotalSize()
	id := serial.Add(1)
	free := func() error { affine, sum = nil, nil; return freeAll(&xd, &bd, &yd, &ones, &dy, &dbias) }
	ready := func() error {
		if affine != nil {
			return nil
		}
		err := kernelsAndBuffers([]string{"channel_affine", "channel_sum"}, []**cuda.Kernel{&affine, &sum},
			[]*deviceTensor{&xd, &bd, &yd, &ones, &dy, &dbias}, []tensor.Shape{xs, bs, xs, bs, xs, bs})
		if err != nil {
			affine = nil
			return err
		}
		one := make([]float32, c)
		for i := range one {
			one[i] = 1
		}
		return cuda.Upload(ones.buf, one)
	}
	gradB := &kernelOp{name: "cuda bias add gradient", inShapes: []tensor.Shape{xs}, out: bs, serial: id, free: free,
		do: func(in []*tensor.Dense) (*tensor.Dense, error) {
			if err := ready(); err != nil {
				return nil, err
			}
			if err := dy.upload(in[0], run); err != nil {
				return nil, fmt.Errorf("dy: %w", err)
			}
			if err := sum.Launch(c, dy.buf, dbias.buf, int32(n), int32(c), int32(sp)); err != nil {
				return nil, err
			}
			return dbias.download(bs)
		}}
	fwd := &kernelOp{name: "cuda bias add", inShapes: []tensor.Shape{xs, bs}, out: xs, serial: id, free: free, diffWRT: []bool{true, true},
		do: func(in []*tensor.Dense) (*tensor.Dense, error) {
			if err := ready(); err != nil {
				return nil, err
			}
			run++
			if err := xd.upload(in[0], run); err != nil {
				return nil, fmt.Errorf("x: %w", err)
			}
			if err := bd.upload(in[1], run); err != nil {
				return nil, fmt.Errorf("b: %w", err)
			}
			if err := affine.Launch(total, xd.buf, ones.buf, bd.buf, yd.buf, int32(total), int32(c), int32(sp), int32(0)); err != nil {
				return nil, err
			}
			return yd.download(xs)
		},
		diff: func(_, grad *G.Node) (G.Nodes, error) {
			db, err := G.ApplyOp(gradB, grad)
			if err != nil {
				return nil, err
			}
			return G.Nodes{grad, db}, nil
		}}
	return G.ApplyOp(fwd, x, b)
}

// GlobalAvgPool is ops.GlobalAvgPool computed by NVRTC kernels: the mean of each channel of a float32 x
// [N,C,H,W] over its H·W positions, [N,C] (kernel global_avg_pool), and its gradient dx = dy/(H·W) spread
// over the channel (kernel global_avg_pool_grad).
func GlobalAvgPool(x *G.Node) (*G.Node, error) {
	xs := x.Shape()
	if xs.Dims() != 4 || x.Dtype() != tensor.Float32 || xs.TotalSize() == 0 {
		return nil, fmt.Errorf("cuda global average pool: input %q is %v %v, want float32 [N,C,H,W]: %w", x.Name(), xs, x.Dtype(), ops.ErrShape)
	}
	ys := tensor.Shape{xs[0], xs[1]}
	var (
		pool, grad     *cuda.Kernel
		xd, yd, dy, dx deviceTensor
	)
	rows, sp, total := xs[0]*xs[1], xs[2]*xs[3], xs.TotalSize()
	id := serial.Add(1)
	free := func() error { pool, grad = nil, nil; return freeAll(&xd, &yd, &dy, &dx) }
	ready := func() error {
		err := kernelsAndBuffers([]string{"global_avg_pool", "global_avg_pool_grad"}, []**cuda.Kernel{&pool, &grad},
			[]*deviceTensor{&xd, &yd, &dy, &dx}, []tensor.Shape{xs, ys, ys, xs})
		if err != nil {
			pool = nil
		}
		return err
	}
	var run uint64
	gradOp := &kernelOp{name: "cuda global average pool gradient", inShapes: []tensor.Shape{ys}, out: xs, serial: id, free: free,
		do: func(in []*tensor.Dense) (*tensor.Dense, error) {
			if err := ready(); err != nil {
				return nil, err
			}
			if err := dy.upload(in[0], run); err != nil {
				return nil, fmt.Errorf("dy: %w", err)
			}
			if err := grad.Launch(total, dy.buf, dx.buf, int32(total), int32(sp)); err != nil {
				return nil, err
			}
			return dx.download(xs)
		}}
	fwd := &kernelOp{name: "cuda global average pool", inShapes: []tensor.Shape{xs}, out: ys, serial: id, free: free, diffWRT: []bool{true},
		do: func(in []*tensor.Dense) (*tensor.Dense, error) {
			if err := ready(); err != nil {
				return nil, err
			}
			run++
			if err := xd.upload(in[0], run); err != nil {
				return nil, fmt.Errorf("x: %w", err)
			}
			if err := pool.Launch(rows, xd.buf, yd.buf, int32(rows), int32(sp)); err != nil {
				return nil, err
			}
			return yd.download(ys)
		},
		diff: func(_, g *G.Node) (G.Nodes, error) {
			dx, err := G.ApplyOp(gradOp, g)
			if err != nil {
				return nil, err
			}
			return G.Nodes{dx}, nil
		}}
	return G.ApplyOp(fwd, x)
}
