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

// GELU applies the exact Gaussian error linear unit elementwise, the non-linearity of the distiller D and
// adapter A (docs/method.md, "Networks": the exact GELU, with erf):
//
//	gelu(x)  = x * Phi(x) = x * 0.5 * (1 + erf(x / sqrt 2))
//	gelu'(x) = Phi(x) + x * phi(x),   phi(x) = exp(-x^2/2) / sqrt(2 pi)
//
// x may have any shape and must be float32 or float64; the result has the shape and dtype of x.
//
// float64 uses math.Erf. float32 uses a faster approximation of erf (see erfcScaled) whose error, at most
// 2e-8 before the result is rounded to float32, stays far below float32's resolution: the exported ONNX
// graph, which computes the same formula with its Erf operator, agrees with it to float32 rounding. On
// processors with AVX2 and FMA, float32 runs four elements at a time in assembly (package internal/vector). At
// |x| >= 30, where Phi(x) rounds to 0 or 1, gelu(x) is taken as x or 0 and gelu'(x) as 1 or 0, which also
// gives gelu(+Inf) = +Inf, gelu(-Inf) = 0 (the limits, where x * Phi(x) would be NaN); NaN gives NaN.
//
// When the graph is differentiated, the forward pass also stores gelu'(x) for the backward pass, which then
// only multiplies; the forward and backward of one GELU must therefore run in the same RunAll, in that order.
func GELU(x *G.Node) (*G.Node, error) {
	if err := requireFloatNode("gelu", x); err != nil {
		return nil, err
	}
	return G.ApplyOp(&geluOp{serial: opSerial.Add(1)}, x)
}

// geluOp is the forward GELU: y = x * Phi(x), and gelu'(x) into deriv when the op has a gradient.
type geluOp struct {
	plainOp
	serial   uint64
	hasGrad  bool // set by SymDiff: Do also computes gelu'(x)
	out      buffer
	deriv    buffer // gelu'(x) of the last run, read by geluGradOp
	derivSet bool   // deriv holds the values of the last run
}

func (op *geluOp) Arity() int { return 1 }

func (op *geluOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}

func (op *geluOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return inferredShape("gelu", in[0])
}

func (op *geluOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *geluOp) Hashcode() uint32      { return hashOf(op) }
func (op *geluOp) String() string        { return fmt.Sprintf("GELU#%d", op.serial) }

// DiffWRT reports that GELU is differentiable with respect to its input.
func (op *geluOp) DiffWRT(int) []bool { return []bool{true} }

// SymDiff returns dx = grad * gelu'(x), with gelu'(x) stored by the forward pass.
func (op *geluOp) SymDiff(inputs G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	if len(inputs) != 1 {
		return nil, fmt.Errorf("gelu: differentiating %d inputs, want 1", len(inputs))
	}
	op.hasGrad = true
	dx, err := G.ApplyOp(&geluGradOp{fwd: op}, grad)
	if err != nil {
		return nil, fmt.Errorf("gelu: building gradient: %w", err)
	}
	return G.Nodes{dx}, nil
}

func (op *geluOp) Do(in ...G.Value) (G.Value, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("gelu: got %d inputs, want 1", len(in))
	}
	x, err := floatDenseValue("gelu", in[0])
	if err != nil {
		return nil, err
	}
	shape := x.Shape()
	y := op.out.get(x.Dtype(), shape...)
	var d *tensor.Dense
	if op.hasGrad {
		d = op.deriv.get(x.Dtype(), shape...)
	}
	switch xs := x.Data().(type) {
	case []float32:
		var ds []float32
		if d != nil {
			ds = d.Float32s()
		}
		parallelFor(len(xs), geluMinWork, func(lo, hi int) { gelu32(y.Float32s()[lo:hi], derivPart(ds, lo, hi), xs[lo:hi]) })
	case []float64:
		var ds []float64
		if d != nil {
			ds = d.Float64s()
		}
		parallelFor(len(xs), geluMinWork, func(lo, hi int) { gelu64(y.Float64s()[lo:hi], derivPart(ds, lo, hi), xs[lo:hi]) })
	}
	op.derivSet = op.hasGrad
	return y, nil
}

// derivPart returns d[lo:hi], or nil when no derivative is wanted.
func derivPart[T float](d []T, lo, hi int) []T {
	if d == nil {
		return nil
	}
	return d[lo:hi]
}

// geluGradOp computes grad * gelu'(x), reading gelu'(x) from its forward op.
type geluGradOp struct {
	plainOp
	fwd *geluOp
	out buffer
}

func (op *geluGradOp) Arity() int { return 1 }

func (op *geluGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}

func (op *geluGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return inferredShape("gelu gradient", in[0])
}

func (op *geluGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *geluGradOp) Hashcode() uint32      { return hashOf(op) }
func (op *geluGradOp) String() string        { return fmt.Sprintf("GELUGrad#%d", op.fwd.serial) }

func (op *geluGradOp) Do(in ...G.Value) (G.Value, error) {
	if len(in) != 1 {
		return nil, fmt.Errorf("gelu gradient: got %d inputs, want 1", len(in))
	}
	grad, err := floatDenseValue("gelu gradient", in[0])
	if err != nil {
		return nil, err
	}
	d := op.fwd.deriv.t
	if !op.fwd.derivSet || d == nil {
		return nil, fmt.Errorf("gelu gradient: %v ran before its forward pass", op)
	}
	if !d.Shape().Eq(grad.Shape()) || d.Dtype() != grad.Dtype() {
		return nil, fmt.Errorf("gelu gradient: input %v %v and gradient %v %v differ: %w", d.Shape(), d.Dtype(), grad.Shape(), grad.Dtype(), ErrShape)
	}
	dx := op.out.get(grad.Dtype(), grad.Shape()...)
	switch gs := grad.Data().(type) {
	case []float32:
		multiply(dx.Float32s(), gs, d.Float32s())
	case []float64:
		multiply(dx.Float64s(), gs, d.Float64s())
	}
	return dx, nil
}

// multiply writes z = x * y element-wise.
func multiply[T float](z, x, y []T) {
	parallelFor(len(z), 1<<15, func(lo, hi int) {
		z, x, y := z[lo:hi], x[lo:hi:hi], y[lo:hi:hi]
		for i := range z {
			z[i] = x[i] * y[i]
		}
	})
}

// geluMinWork is the number of elements per goroutine below which splitting the loop costs more than it
// saves (an element costs a few nanoseconds, a goroutine about a microsecond).
const geluMinWork = 16384

// geluTail is the |x| from which gelu is evaluated as x or 0: Phi(-30) < 1e-197, which rounds Phi to 0 or 1 in
// float64 and keeps exp(-x^2/2) far from underflow in expNonPositive for smaller |x|.
const geluTail = 30

// gelu64 writes gelu(x) to y and, unless d is nil, gelu'(x) to d, with math.Erf.
func gelu64(y, d, x []float64) {
	for i, v := range x {
		if !(math.Abs(v) < geluTail) {
			y[i], _ = geluLimits(v)
			if d != nil {
				_, d[i] = geluLimits(v)
			}
			continue
		}
		cdf := 0.5 * (1 + math.Erf(v/math.Sqrt2))
		y[i] = v * cdf
		if d != nil {
			d[i] = cdf + v*math.Exp(-0.5*v*v)/math.Sqrt(2*math.Pi)
		}
	}
}

// gelu32 writes gelu(x) to y and, unless d is nil, gelu'(x) to d: four elements at a time with the
// assembly kernel vector.GELU where the processor runs it (AVX2 and FMA), the rest with geluScalar. Both
// evaluate the same formula in float64; the kernel's fused multiply-adds round differently, by at most one
// float32 rounding of the results.
func gelu32(y, d, x []float32) {
	n := 0
	if vector.HasAVX2 {
		n = len(x) &^ 3
		var dv []float32
		if d != nil {
			dv = d[:n]
		}
		vector.GELU(y[:n], dv, x[:n], &geluVectorConsts)
	}
	var ds []float32
	if d != nil {
		ds = d[n:]
	}
	geluScalar(y[n:], ds, x[n:])
}

// geluScalar writes gelu(x) to y and, unless d is nil, gelu'(x) to d, with Phi from erfc:
//
//	Phi(x) = 1 - erfc(u)/2 for x >= 0,  erfc(u)/2 for x < 0,   u = |x|/sqrt 2
//
// Both signs are one expression with the sign of x, so that the loop has no data-dependent branch (the
// inputs' signs are close to random), and exp(-u^2) serves both Phi and phi. The loop body is kept inlinable
// and its polynomials in Estrin's form: evaluating an element is a chain of dependent multiplications, and
// shorter chains let the processor overlap more elements.
func geluScalar(y, d, x []float32) {
	y = y[:len(x)]
	if d != nil {
		d = d[:len(x)]
	}
	for i, v := range x {
		xv := float64(v)
		if !(math.Abs(xv) < geluTail) {
			g, dg := geluLimits(xv)
			y[i] = float32(g)
			if d != nil {
				d[i] = float32(dg)
			}
			continue
		}
		u := math.Abs(xv) * (1 / math.Sqrt2)
		e := expNonPositive(-u * u)
		half := 0.5 * e * erfcScaled(u) // Phi(-|x|) = erfc(u)/2
		cdf := 0.5 + math.Copysign(0.5-half, xv)
		y[i] = float32(xv * cdf)
		if d != nil {
			d[i] = float32(cdf + xv*e*(1/math.Sqrt(2*math.Pi)))
		}
	}
}

// geluLimits returns gelu and gelu' where Phi(x) is 0 or 1 to float64 precision, and NaN for NaN.
func geluLimits(x float64) (gelu, deriv float64) {
	switch {
	case x > 0:
		return x, 1
	case x < 0:
		return 0, 0
	}
	return x, x
}

// Coefficients of erfcScaled, fitted by testdata/fit_erfc.py: Abramowitz & Stegun's form 7.1.26 with one more
// term, refitted for the smallest largest error on [0, 10] (8.3e-9 absolute in erfc).
const (
	erfcP  = 0.39
	erfcC0 = 0.2353251491930754
	erfcC1 = 0.09138885304867916
	erfcC2 = 0.6495583056340817
	erfcC3 = -0.6353989254736275
	erfcC4 = 0.8866635375113208
	erfcC5 = -0.22753692160958422
)

// geluVectorConsts are the constants of geluScalar for vector.GELU, each in four lanes, at the byte offsets
// its assembly reads them from (internal/vector/gelu_amd64.s).
var geluVectorConsts = vector.GELUConstants{
	lanes(math.Float64frombits(0x7fffffffffffffff)), // 0: |x| mask
	lanes(math.Float64frombits(0x8000000000000000)), // 32: sign mask
	lanes(1 / math.Sqrt2),                           // 64
	lanes(math.Log2E),                               // 96
	lanes(0x1.8p52),                                 // 128: expNonPositive's rounding constant
	lanes(math.Ln2),                                 // 160
	lanes(1. / 40320),                               // 192: exp(r) Taylor coefficients 1/8! ... 1/3!
	lanes(1. / 5040),                                // 224
	lanes(1. / 720),                                 // 256
	lanes(1. / 120),                                 // 288
	lanes(1. / 24),                                  // 320
	lanes(1. / 6),                                   // 352
	lanes(0.5),                                      // 384
	lanes(1),                                        // 416
	lanes(math.Float64frombits(0x4338000000000000 - 1023)), // 448: bits of the rounding constant minus the exponent bias
	lanes(erfcP),                    // 480
	lanes(erfcC5),                   // 512
	lanes(erfcC4),                   // 544
	lanes(erfcC3),                   // 576
	lanes(erfcC2),                   // 608
	lanes(erfcC1),                   // 640
	lanes(erfcC0),                   // 672
	lanes(1 / math.Sqrt(2*math.Pi)), // 704
	lanes(geluTail),                 // 736
}

// lanes returns v in all four lanes.
func lanes(v float64) [4]float64 { return [4]float64{v, v, v, v} }

// erfcScaled returns erfc(u) * exp(u^2) for u >= 0, within 8.3e-9 * exp(u^2):
//
//	erfc(u) * exp(u^2) ~ t * (c0 + c1 t + c2 t^2 + c3 t^3 + c4 t^4 + c5 t^5),   t = 1 / (1 + p u)
func erfcScaled(u float64) float64 {
	t := 1 / (1 + erfcP*u)
	t2 := t * t
	return t * ((erfcC0 + t*erfcC1) + t2*((erfcC2+t*erfcC3)+t2*(erfcC4+t*erfcC5)))
}

// expNonPositive returns exp(a) for -500 <= a <= 0 to a relative error below 3e-10, without math.Exp's
// special cases: with a = k ln2 + r, |r| <= ln2/2,
//
//	exp(a) = 2^k * exp(r),   exp(r) ~ Σ_{j=0..8} r^j / j!   (remainder below e^|r| |r|^9/9! < 3e-10)
func expNonPositive(a float64) float64 {
	// Adding 1.5·2^52 rounds a·log2(e) to the integer k held in the low mantissa bits.
	const round = 0x1.8p52
	kr := a*math.Log2E + round
	r := a - (kr-round)*math.Ln2
	r2 := r * r
	p := (1 + r) + r2*((1./2+r*(1./6))+r2*((1./24+r*(1./120))+r2*((1./720+r*(1./5040))+r2*(1./40320))))
	// 2^k as a float64: exponent field k+1023; the bits of kr are those of round (0x4338000000000000) plus k,
	// and wrapping uint64 arithmetic yields k+1023 for negative k too.
	return p * math.Float64frombits((math.Float64bits(kr)-(0x4338000000000000-1023))<<52)
}
