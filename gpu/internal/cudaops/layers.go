package cudaops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/gpu/internal/cuda"
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

// BatchNormEval is bn.Apply(x, gamma, beta, false, relu) of models/ops computed by NVRTC kernels: the
// evaluation-mode batch norm of a float32 x [N,C,H,W] or [N,C] with bn's running statistics, read at each
// run and checked as the CPU op checks them (ops.BatchNorm.EvalAffine gives the per-channel affine map
// channel_affine applies), then the ReLU if relu; and its gradients with respect to x
// (bn_eval_backward_data) and γ and β (bn_eval_backward_params, both in one launch).
func BatchNormEval(bn *ops.BatchNorm, x, gamma, beta *G.Node, relu bool) (*G.Node, error) {
	if err := checkBatchNormEval(bn, x, gamma, beta); err != nil {
		return nil, err
	}
	s := &bnEval{bn: bn, xs: x.Shape(), cs: tensor.Shape{bn.Channels}, id: serial.Add(1)}
	s.n, s.c, s.sp = planes(s.xs)
	if relu {
		s.flag = 1
	}
	gradX := s.gradOp("cuda batch norm (evaluation) dx", s.xs, s.gradX)
	gradGamma := s.gradOp("cuda batch norm (evaluation) dgamma", s.cs, func(in []*tensor.Dense) (*tensor.Dense, error) {
		return s.paramGrad(in, &s.dgamma)
	})
	gradBeta := s.gradOp("cuda batch norm (evaluation) dbeta", s.cs, func(in []*tensor.Dense) (*tensor.Dense, error) {
		return s.paramGrad(in, &s.dbeta)
	})
	fwd := &kernelOp{name: "cuda batch norm (evaluation)", inShapes: []tensor.Shape{s.xs, s.cs, s.cs}, out: s.xs, serial: s.id, free: s.free,
		diffWRT: []bool{true, true, true},
		do:      s.forward,
		diff: func(y, g *G.Node) (G.Nodes, error) {
			var out G.Nodes
			for _, op := range []*kernelOp{gradX, gradGamma, gradBeta} {
				d, err := G.ApplyOp(op, y, g)
				if err != nil {
					return nil, err
				}
				out = append(out, d)
			}
			return out, nil
		}}
	return G.ApplyOp(fwd, x, gamma, beta)
}

// checkBatchNormEval refuses the inputs BatchNormEval cannot take, wrapping ops.ErrShape.
func checkBatchNormEval(bn *ops.BatchNorm, x, gamma, beta *G.Node) error {
	xs := x.Shape()
	switch {
	case (xs.Dims() != 4 && xs.Dims() != 2) || x.Dtype() != tensor.Float32 || xs.TotalSize() == 0:
		return fmt.Errorf("cuda batch norm: input %q is %v %v, want float32 [N,C,H,W] or [N,C]: %w", x.Name(), xs, x.Dtype(), ops.ErrShape)
	case xs[1] != bn.Channels:
		return fmt.Errorf("cuda batch norm: input %q has %d channels, layer has %d: %w", x.Name(), xs[1], bn.Channels, ops.ErrShape)
	}
	cs := tensor.Shape{bn.Channels}
	for _, p := range []*G.Node{gamma, beta} {
		if !p.Shape().Eq(cs) || p.Dtype() != tensor.Float32 {
			return fmt.Errorf("cuda batch norm: parameter %q is %v %v, want [%d] float32: %w", p.Name(), p.Shape(), p.Dtype(), bn.Channels, ops.ErrShape)
		}
	}
	return nil
}

// bnEval is the device state one BatchNormEval shares with its gradient ops: the kernels, the device
// buffers, and the run counters that let the two parameter gradients share one launch.
type bnEval struct {
	bn                                  *ops.BatchNorm
	xs, cs                              tensor.Shape
	n, c, sp                            int
	flag                                int32 // 1: the ReLU is fused
	id                                  uint64
	affine, data, params                *cuda.Kernel
	xd, ad, bd, meanD, invD, yd, dy, dx deviceTensor
	dgamma, dbeta                       deviceTensor
	run, paramsRun                      uint64
}

func (s *bnEval) free() error {
	s.affine, s.data, s.params = nil, nil, nil
	return freeAll(&s.xd, &s.ad, &s.bd, &s.meanD, &s.invD, &s.yd, &s.dy, &s.dx, &s.dgamma, &s.dbeta)
}

// ready compiles the kernels and allocates the buffers on the first run.
func (s *bnEval) ready() error {
	if s.affine != nil {
		return nil
	}
	r, err := cuda.Open()
	if err != nil {
		return err
	}
	if err := s.invD.alloc(r, tensor.Float64, s.cs); err != nil {
		return err
	}
	xs, cs := s.xs, s.cs
	err = kernelsAndBuffers([]string{"channel_affine", "bn_eval_backward_data", "bn_eval_backward_params"},
		[]**cuda.Kernel{&s.affine, &s.data, &s.params},
		[]*deviceTensor{&s.xd, &s.ad, &s.bd, &s.meanD, &s.yd, &s.dy, &s.dx, &s.dgamma, &s.dbeta}, []tensor.Shape{xs, cs, cs, cs, xs, xs, xs, cs, cs})
	if err != nil {
		s.affine = nil
	}
	return err
}

// forward uploads x and the per-channel map from the running statistics, and applies it.
func (s *bnEval) forward(in []*tensor.Dense) (*tensor.Dense, error) {
	a, b, inv, err := s.bn.EvalAffine(in[1].Float32s(), in[2].Float32s())
	if err != nil {
		return nil, err
	}
	if err := s.ready(); err != nil {
		return nil, err
	}
	s.run++
	if err := s.xd.upload(in[0], s.run); err != nil {
		return nil, fmt.Errorf("x: %w", err)
	}
	for _, u := range []struct {
		d    *deviceTensor
		v    any
		what string
	}{{&s.ad, a, "scale"}, {&s.bd, b, "shift"}, {&s.meanD, s.bn.RunningMean, "running mean"}, {&s.invD, inv, "1/σ"}} {
		if err := u.d.upload(tensor.New(tensor.WithShape(s.cs...), tensor.WithBacking(u.v)), s.run); err != nil {
			return nil, fmt.Errorf("%s: %w", u.what, err)
		}
	}
	total := s.xs.TotalSize()
	if err := s.affine.Launch(total, s.xd.buf, s.ad.buf, s.bd.buf, s.yd.buf, int32(total), int32(s.c), int32(s.sp), s.flag); err != nil {
		return nil, err
	}
	return s.yd.download(s.xs)
}

// gradOp is a gradient op of the forward run: inputs y and dy.
func (s *bnEval) gradOp(name string, out tensor.Shape, do func(in []*tensor.Dense) (*tensor.Dense, error)) *kernelOp {
	return &kernelOp{name: name, inShapes: []tensor.Shape{s.xs, s.xs}, out: out, serial: s.id, free: s.free,
		do: func(in []*tensor.Dense) (*tensor.Dense, error) {
			if s.affine == nil || s.run == 0 {
				return nil, fmt.Errorf("the forward batch norm has not run")
			}
			return do(in)
		}}
}

func (s *bnEval) gradX(in []*tensor.Dense) (*tensor.Dense, error) {
	if err := s.dy.upload(in[1], s.run); err != nil {
		return nil, fmt.Errorf("dy: %w", err)
	}
	total := s.xs.TotalSize()
	if err := s.data.Launch(total, s.dy.buf, s.yd.buf, s.ad.buf, s.dx.buf, int32(total), int32(s.c), int32(s.sp), s.flag); err != nil {
		return nil, err
	}
	return s.dx.download(s.xs)
}

// paramGrad returns dγ or dβ (d), launching the kernel that computes both once per run.
func (s *bnEval) paramGrad(in []*tensor.Dense, d *deviceTensor) (*tensor.Dense, error) {
	if s.paramsRun != s.run {
		if err := s.dy.upload(in[1], s.run); err != nil {
			return nil, fmt.Errorf("dy: %w", err)
		}
		if err := s.params.Launch(s.c, s.xd.buf, s.yd.buf, s.dy.buf, s.meanD.buf, s.invD.buf, s.dgamma.buf, s.dbeta.buf, int32(s.n), int32(s.c), int32(s.sp), s.flag); err != nil {
			return nil, err
		}
		s.paramsRun = s.run
	}
	return d.download(s.cs)
}
