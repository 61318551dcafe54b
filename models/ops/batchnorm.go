package ops

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BatchNorm holds the running statistics of one batch-normalisation layer, with PyTorch's nn.BatchNorm2d /
// nn.BatchNorm1d semantics. A training graph and an evaluation graph built from the same BatchNorm share the
// statistics (gorgonia's own BatchNormOp resets them on SetTraining).
//
// In training, a channel c of M = N·H·W values is normalised with its batch mean μ and biased batch
// variance σ², and the running statistics move towards the batch ones with the unbiased variance:
//
//	y = γ·(x-μ)/sqrt(σ²+Eps) + β
//	RunningMean = (1-Momentum)·RunningMean + Momentum·μ
//	RunningVar  = (1-Momentum)·RunningVar  + Momentum·σ²·M/(M-1)
//
// In evaluation, μ and σ² are RunningMean and RunningVar and nothing is updated; running the graph fails
// with ErrBadStats if they are not finite or a variance is negative. The fields may be set
// directly (for example when loading a checkpoint) between runs; RunningMean and RunningVar must have length
// Channels. A BatchNorm is not safe for concurrent use: do not run two graphs that use it at the same time.
type BatchNorm struct {
	Channels      int
	Momentum, Eps float64
	RunningMean   []float32
	RunningVar    []float32
}

// NewBatchNorm returns a BatchNorm with PyTorch's defaults: momentum 0.1, eps 1e-5, running mean 0 and
// running variance 1.
func NewBatchNorm(channels int) *BatchNorm {
	if channels <= 0 {
		panic(fmt.Sprintf("ops: NewBatchNorm with %d channels", channels))
	}
	bn := &BatchNorm{
		Channels:    channels,
		Momentum:    0.1,
		Eps:         1e-5,
		RunningMean: make([]float32, channels),
		RunningVar:  make([]float32, channels),
	}
	for i := range bn.RunningVar {
		bn.RunningVar[i] = 1
	}
	return bn
}

// Apply adds the normalisation of x to x's graph and returns its output, of the shape of x:
//
//	y = γ[c]·(x-μ[c])/sqrt(σ²[c]+Eps) + β[c]        (then max(y, 0) if relu)
//
// x is [N,C,H,W] or [N,C], gamma and beta are [C] with C = bn.Channels. training selects batch statistics
// (updating the running ones each time the graph runs) or the running statistics. The gradient flows to x,
// gamma and beta in both modes; in evaluation mode μ and σ² are constants. It returns an error wrapping
// ErrShape if the shapes or dtypes do not fit, or if training with a single value per channel.
func (bn *BatchNorm) Apply(x, gamma, beta *G.Node, training, relu bool) (*G.Node, error) {
	xs := x.Shape()
	if xs.Dims() != 4 && xs.Dims() != 2 {
		return nil, fmt.Errorf("batch norm: input %q has shape %v, want [N,C,H,W] or [N,C]: %w", x.Name(), xs, ErrShape)
	}
	if xs[1] != bn.Channels || len(bn.RunningMean) != bn.Channels || len(bn.RunningVar) != bn.Channels {
		return nil, fmt.Errorf("batch norm: input %q has %d channels, layer has %d (running stats %d, %d): %w",
			x.Name(), xs[1], bn.Channels, len(bn.RunningMean), len(bn.RunningVar), ErrShape)
	}
	for _, p := range []*G.Node{gamma, beta} {
		if ps := p.Shape(); ps.Dims() != 1 || ps[0] != bn.Channels || p.Dtype() != x.Dtype() {
			return nil, fmt.Errorf("batch norm: parameter %q is %v %v, want [%d] %v: %w", p.Name(), ps, p.Dtype(), bn.Channels, x.Dtype(), ErrShape)
		}
	}
	if err := checkFloat("batch norm", x); err != nil {
		return nil, err
	}
	op := &bnOp{inPlaceOp: inPlaceOp{overwrite: x.Op() != nil}, bn: bn, training: training, relu: relu, serial: opSerial.Add(1)}
	op.dims, op.n, op.c, op.s = xs.Dims(), xs[0], xs[1], 1
	if xs.Dims() == 4 {
		op.s = xs[2] * xs[3]
	}
	if training && op.n*op.s < 2 {
		return nil, fmt.Errorf("batch norm: input %q has shape %v, training needs more than one value per channel: %w", x.Name(), xs, ErrShape)
	}
	op.mean = make([]float64, op.c)
	op.invStd = make([]float64, op.c)
	return G.ApplyOp(op, x, gamma, beta)
}

// bnOp computes the batch-norm forward pass; it keeps the per-channel mean and 1/sqrt(var+eps) it used for
// the backward pass of the same run.
type bnOp struct {
	inPlaceOp      // writes over x when nothing reads x later
	bn             *BatchNorm
	training, relu bool
	serial         uint64
	dims           int // rank of x: 2 or 4
	n, c, s        int // batch, channels, spatial size per channel

	mean, invStd []float64
	out          buffer
}

func (op *bnOp) Arity() int { return 3 }
func (op *bnOp) Type() hm.Type {
	t := tensorType(op.dims)
	return hm.NewFnType(t, tensorType(1), tensorType(1), t)
}
func (op *bnOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return in[0].(tensor.Shape).Clone(), nil
}
func (op *bnOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *bnOp) Hashcode() uint32      { return hashOf(op) }
func (op *bnOp) String() string {
	return fmt.Sprintf("BatchNorm#%d{training=%t, relu=%t}", op.serial, op.training, op.relu)
}

func (op *bnOp) DiffWRT(int) []bool { return []bool{true, true, true} }

func (op *bnOp) SymDiff(in G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	gop := &bnGradOp{inPlaceOp: inPlaceOp{overwrite: grad.Op() != nil, input: 3}, fwd: op}
	dx, err := G.ApplyOp(gop, in[0], in[1], output, grad)
	if err != nil {
		return nil, err
	}
	dgamma, err := G.ApplyOp(&bnParamGradOp{src: gop, beta: false}, dx)
	if err != nil {
		return nil, err
	}
	dbeta, err := G.ApplyOp(&bnParamGradOp{src: gop, beta: true}, dx)
	if err != nil {
		return nil, err
	}
	return G.Nodes{dx, dgamma, dbeta}, nil
}

// UsePreallocDo normalises x in place when dest is x itself, else as Do.
func (op *bnOp) UsePreallocDo(dest G.Value, vals ...G.Value) (G.Value, error) {
	return op.do(op.isDest(dest, vals), vals...)
}

// Do normalises x into the op's own output buffer.
func (op *bnOp) Do(vals ...G.Value) (G.Value, error) { return op.do(false, vals...) }

// UnsafeDo normalises x in place.
func (op *bnOp) UnsafeDo(vals ...G.Value) (G.Value, error) { return op.do(true, vals...) }

func (op *bnOp) do(inPlace bool, vals ...G.Value) (G.Value, error) {
	if profileLabels.Load() {
		defer labelOp(fmt.Sprintf("%v [%d %d %d]", op, op.n, op.c, op.s))()
	}
	x, ok := vals[0].(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("batch norm: input is %T, want a dense tensor: %w", vals[0], ErrShape)
	}
	dt := x.Dtype()
	x, err := denseOf("batch norm", 0, x, dt, nil)
	if err != nil {
		return nil, err
	}
	gamma, err := denseOf("batch norm", 1, vals[1], dt, tensor.Shape{op.c})
	if err != nil {
		return nil, err
	}
	beta, err := denseOf("batch norm", 2, vals[2], dt, tensor.Shape{op.c})
	if err != nil {
		return nil, err
	}
	if x.DataSize() != op.n*op.c*op.s {
		return nil, fmt.Errorf("batch norm: input has shape %v, graph was built for %d values: %w", x.Shape(), op.n*op.c*op.s, ErrShape)
	}
	if len(op.bn.RunningMean) != op.c || len(op.bn.RunningVar) != op.c {
		return nil, fmt.Errorf("batch norm: running stats have lengths %d, %d, want %d: %w",
			len(op.bn.RunningMean), len(op.bn.RunningVar), op.c, ErrShape)
	}
	if !op.training {
		// The running statistics come from outside (a checkpoint): refuse values that would silently
		// turn every output into NaN.
		if err := op.bn.CheckStats(); err != nil {
			return nil, err
		}
	}
	y := x
	if !inPlace || x != vals[0] { // a materialised view is a copy already, but not a buffer the op keeps
		y = op.out.get(dt, x.Shape()...)
	}
	switch dt {
	case tensor.Float32:
		bnForward(op, x.Float32s(), gamma.Float32s(), beta.Float32s(), y.Float32s())
	case tensor.Float64:
		bnForward(op, x.Float64s(), gamma.Float64s(), beta.Float64s(), y.Float64s())
	}
	return y, nil
}

// CheckStats returns an error wrapping ErrBadStats if a running mean is not finite or a running variance is
// negative, infinite or NaN: the evaluation mode refuses such statistics (from a checkpoint) rather than turn
// every output into NaN.
func (bn *BatchNorm) CheckStats() error {
	for ch, v := range bn.RunningVar {
		if m := bn.RunningMean[ch]; !(v >= 0) || math.IsInf(float64(v), 1) || math.IsNaN(float64(m)) || math.IsInf(float64(m), 0) {
			return fmt.Errorf("batch norm: running mean %g, variance %g of channel %d: %w", m, v, ch, ErrBadStats)
		}
	}
	return nil
}

// EvalAffine returns the evaluation mode as one affine map per channel, y = a·x + b with a = γ/σ and
// b = β − a·μ from the running statistics, and 1/σ, each computed in float64 as Apply computes them; or
// CheckStats's error. The GPU's evaluation-mode batch norm (gpu/internal/cudaops) applies them.
func (bn *BatchNorm) EvalAffine(gamma, beta []float32) (a, b []float32, invStd []float64, err error) {
	if len(gamma) != bn.Channels || len(beta) != bn.Channels || len(bn.RunningMean) != bn.Channels || len(bn.RunningVar) != bn.Channels {
		return nil, nil, nil, fmt.Errorf("batch norm: %d, %d parameters and %d, %d running statistics for %d channels: %w",
			len(gamma), len(beta), len(bn.RunningMean), len(bn.RunningVar), bn.Channels, ErrShape)
	}
	if err := bn.CheckStats(); err != nil {
		return nil, nil, nil, err
	}
	a, b, invStd = make([]float32, bn.Channels), make([]float32, bn.Channels), make([]float64, bn.Channels)
	for ch := range a {
		a64, b64, inv := bnAffine(float64(gamma[ch]), float64(beta[ch]), float64(bn.RunningMean[ch]), float64(bn.RunningVar[ch]), bn.Eps)
		a[ch], b[ch], invStd[ch] = float32(a64), float32(b64), inv
	}
	return a, b, invStd, nil
}

// bnAffine returns a = γ/σ, b = β − γ/σ·μ and 1/σ for σ = sqrt(variance + eps).
func bnAffine(gamma, beta, mean, variance, eps float64) (a, b, inv float64) {
	inv = 1 / math.Sqrt(variance+eps)
	return gamma * inv, beta - gamma*inv*mean, inv
}

// bnForward normalises x into y one channel per task: in training two passes for the mean and the centred
// variance (more accurate than a sum of squares), then one pass that writes y. Each run of S values is summed
// in T and the runs in float64.
func bnForward[T float](op *bnOp, x, gamma, beta, y []T) {
	n, c, s := op.n, op.c, op.s
	m := float64(n * s)
	parallelUnits(c, Threads(), func(ch int) {
		var mean, variance float64
		if op.training {
			var total float64
			for i := 0; i < n; i++ {
				total += float64(sum(x[(i*c+ch)*s : (i*c+ch+1)*s]))
			}
			mean = total / m
			var sq float64
			for i := 0; i < n; i++ {
				sq += float64(sumSquaredDev(x[(i*c+ch)*s:(i*c+ch+1)*s], T(mean)))
			}
			variance = sq / m
			mom := op.bn.Momentum
			op.bn.RunningMean[ch] = float32((1-mom)*float64(op.bn.RunningMean[ch]) + mom*mean)
			op.bn.RunningVar[ch] = float32((1-mom)*float64(op.bn.RunningVar[ch]) + mom*sq/(m-1))
		} else {
			mean, variance = float64(op.bn.RunningMean[ch]), float64(op.bn.RunningVar[ch])
		}
		// y = a·x + b with a = γ/σ and b = β - a·μ: one multiply-add per element.
		a64, b64, inv := bnAffine(float64(gamma[ch]), float64(beta[ch]), mean, variance, op.bn.Eps)
		op.mean[ch], op.invStd[ch] = mean, inv
		a, b := T(a64), T(b64)
		for i := 0; i < n; i++ {
			affine(y[(i*c+ch)*s:(i*c+ch+1)*s], x[(i*c+ch)*s:(i*c+ch+1)*s], a, b, op.relu)
		}
	})
}

// bnGradOp computes the gradient with respect to the batch-norm input and keeps those with respect to γ and β
// for the two bnParamGradOps that read them. Its inputs are x, γ, the forward output y (for the ReLU mask) and
// the output gradient dy. With g = dy masked by y > 0 when ReLU is fused and x̂ = (x-μ)/σ, per channel:
//
//	dβ = Σ g        dγ = Σ g·x̂
//	dx = γ/σ · (g - dβ/M - x̂·dγ/M)     (training)
//	dx = γ/σ · g                        (evaluation)
type bnGradOp struct {
	inPlaceOp
	fwd           *bnOp
	dgamma, dbeta []float64
	out           buffer
}

func (op *bnGradOp) Arity() int { return 4 }
func (op *bnGradOp) Type() hm.Type {
	t := op.fwd.Type().(*hm.FunctionType).Arg()
	return hm.NewFnType(t, tensorType(1), t, t, t)
}
func (op *bnGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return in[0].(tensor.Shape).Clone(), nil
}
func (op *bnGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *bnGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *bnGradOp) String() string        { return fmt.Sprintf("BatchNormGrad#%d", op.fwd.serial) }

// UsePreallocDo writes dx over dy when dest is dy itself, else as Do.
func (op *bnGradOp) UsePreallocDo(dest G.Value, vals ...G.Value) (G.Value, error) {
	return op.do(op.isDest(dest, vals), vals...)
}

// UnsafeDo writes dx over dy.
func (op *bnGradOp) UnsafeDo(vals ...G.Value) (G.Value, error) { return op.do(true, vals...) }

// Do writes dx into the op's own buffer.
func (op *bnGradOp) Do(vals ...G.Value) (G.Value, error) { return op.do(false, vals...) }

// do computes dx; with inPlace it writes dx over dy, which bnBackward allows: each channel's sums are taken
// before its dx is written, and every write reads only the same element of dy.
func (op *bnGradOp) do(inPlace bool, vals ...G.Value) (G.Value, error) {
	if profileLabels.Load() {
		defer labelOp(fmt.Sprintf("%v [%d %d %d]", op, op.fwd.n, op.fwd.c, op.fwd.s))()
	}
	f := op.fwd
	x, ok := vals[0].(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("batch norm gradient: input is %T, want a dense tensor: %w", vals[0], ErrShape)
	}
	dt := x.Dtype()
	var in [4]*tensor.Dense
	for i, want := range []tensor.Shape{x.Shape(), {f.c}, x.Shape(), x.Shape()} {
		d, err := denseOf("batch norm gradient", i, vals[i], dt, want)
		if err != nil {
			return nil, err
		}
		in[i] = d
	}
	if op.dgamma == nil {
		op.dgamma, op.dbeta = make([]float64, f.c), make([]float64, f.c)
	}
	dx := in[3]
	if !inPlace {
		dx = op.out.get(dt, x.Shape()...)
	}
	switch dt {
	case tensor.Float32:
		bnBackward(op, in[0].Float32s(), in[1].Float32s(), in[2].Float32s(), in[3].Float32s(), dx.Float32s())
	case tensor.Float64:
		bnBackward(op, in[0].Float64s(), in[1].Float64s(), in[2].Float64s(), in[3].Float64s(), dx.Float64s())
	}
	return dx, nil
}

func bnBackward[T float](op *bnGradOp, x, gamma, y, dy, dx []T) {
	f := op.fwd
	n, c, s := f.n, f.c, f.s
	m := float64(n * s)
	parallelUnits(c, Threads(), func(ch int) {
		mean, inv := f.mean[ch], f.invStd[ch]
		// First pass: g (dy masked by the ReLU, kept in dx) and its two sums.
		var sumG, sumGX float64
		for i := 0; i < n; i++ {
			off := (i*c + ch) * s
			g := dy[off : off+s]
			if f.relu {
				maskByPositive(y[off:off+s], g, dx[off:off+s])
				g = dx[off : off+s]
			}
			sg, sgx := sumAndDot(g, x[off:off+s], T(mean))
			sumG += float64(sg)
			sumGX += float64(sgx)
		}
		sumGX *= inv // Σ g·x̂
		op.dbeta[ch], op.dgamma[ch] = sumG, sumGX
		// Second pass: dx = a·g + b·x + k, folding x̂ = (x-μ)·inv into per-channel constants.
		a := float64(gamma[ch]) * inv
		var b, k float64
		if f.training {
			b = -a * sumGX * inv / m
			k = -a*sumG/m - b*mean
		}
		at, bt, kt := T(a), T(b), T(k)
		for i := 0; i < n; i++ {
			off := (i*c + ch) * s
			g := dy[off : off+s]
			if f.relu {
				g = dx[off : off+s]
			}
			affine2(dx[off:off+s], g, x[off:off+s], at, bt, kt)
		}
	})
}

// bnParamGradOp returns the gradient with respect to γ or β that its source bnGradOp computed in the same run;
// its one input is that op's output, which orders it after the source.
type bnParamGradOp struct {
	plainOp
	src  *bnGradOp
	beta bool
	out  buffer
}

func (op *bnParamGradOp) Arity() int { return 1 }
func (op *bnParamGradOp) Type() hm.Type {
	return hm.NewFnType(op.src.fwd.Type().(*hm.FunctionType).Arg(), tensorType(1))
}
func (op *bnParamGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.Shape{op.src.fwd.c}, nil
}
func (op *bnParamGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *bnParamGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *bnParamGradOp) String() string {
	if op.beta {
		return fmt.Sprintf("BatchNormGradBeta#%d", op.src.fwd.serial)
	}
	return fmt.Sprintf("BatchNormGradGamma#%d", op.src.fwd.serial)
}

func (op *bnParamGradOp) Do(vals ...G.Value) (G.Value, error) {
	src := op.src.dgamma
	if op.beta {
		src = op.src.dbeta
	}
	if src == nil {
		return nil, fmt.Errorf("batch norm parameter gradient: %v ran before its source", op)
	}
	dt := vals[0].Dtype()
	out := op.out.get(dt, op.src.fwd.c)
	switch dt {
	case tensor.Float32:
		for i, v := range src {
			out.Float32s()[i] = float32(v)
		}
	case tensor.Float64:
		copy(out.Float64s(), src)
	default:
		return nil, fmt.Errorf("batch norm parameter gradient: dtype %v: %w", dt, ErrShape)
	}
	return out, nil
}
