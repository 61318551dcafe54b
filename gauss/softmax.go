package gauss

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// SoftmaxHead is a linear softmax classifier over features: the logit of
// class c is W[c]·x + B[c] (W [K, S] row-major, B [K]).
type SoftmaxHead struct {
	K, S int
	W, B []float64
}

// SoftmaxFit sets how FitSoftmaxHead fits a head.
type SoftmaxFit struct {
	// WeightDecay is lambda in the objective's lambda/2 ||W||^2 (the biases
	// are not decayed).
	WeightDecay float64
	// Steps is the number of full-batch Adam steps (learning rate 0.05,
	// betas 0.9 and 0.999); the objective is convex, so a few hundred steps
	// of the whole batch converge without a schedule.
	Steps int
}

// FitSoftmaxHead fits a linear softmax head to the m rows of x ([m, s]
// row-major) with labels y in [0, k): it minimises the mean cross-entropy
// plus fit.WeightDecay/2 ||W||^2 by full-batch Adam from zero weights. The
// arithmetic is float64 and deterministic. It panics on inconsistent sizes
// or a label out of range.
func FitSoftmaxHead(x []float64, y []int, m, s, k int, fit SoftmaxFit) SoftmaxHead {
	if len(x) != m*s || len(y) != m || k < 1 || m < 1 {
		panic(fmt.Sprintf("gauss: softmax head: %d values and %d labels for %d rows of dimension %d, %d classes", len(x), len(y), m, s, k))
	}
	for i, c := range y {
		if c < 0 || c >= k {
			panic(fmt.Sprintf("gauss: softmax head: label %d of row %d not in [0, %d)", c, i, k))
		}
	}
	// The weights act on sqrt(S)-scaled rows: for unit-norm features a unit
	// step of Adam then moves a logit by O(1) whatever S is.
	scale := math.Sqrt(float64(s))
	n := k*s + k
	w := make([]float64, n) // W [k, s] then B [k]
	grad := make([]float64, n)
	m1 := make([]float64, n)
	m2 := make([]float64, n)
	p := make([]float64, m*k) // logits, then dLoss/dlogits
	xs := blas64.General{Rows: m, Cols: s, Stride: s, Data: x}
	pm := blas64.General{Rows: m, Cols: k, Stride: k, Data: p}
	const lr, beta1, beta2 = 0.05, 0.9, 0.999
	for step := 1; step <= fit.Steps; step++ {
		// logits = scale * X W^T + B
		for i := range m {
			copy(p[i*k:(i+1)*k], w[k*s:])
		}
		blas64.Gemm(blas.NoTrans, blas.Trans, scale, xs, blas64.General{Rows: k, Cols: s, Stride: s, Data: w[:k*s]}, 1, pm)
		clear(grad)
		for i := range m {
			row := p[i*k : (i+1)*k]
			lse := logSumExp(row)
			for c := range row {
				row[c] = math.Exp(row[c]-lse) / float64(m)
			}
			row[y[i]] -= 1 / float64(m)
			for c, v := range row {
				grad[k*s+c] += v
			}
		}
		// dW = scale * P^T X + lambda W
		blas64.Gemm(blas.Trans, blas.NoTrans, scale, pm, xs, 0, blas64.General{Rows: k, Cols: s, Stride: s, Data: grad[:k*s]})
		for j := range k * s {
			grad[j] += fit.WeightDecay * w[j]
		}
		c1 := 1 - math.Pow(beta1, float64(step))
		c2 := 1 - math.Pow(beta2, float64(step))
		for j, g := range grad {
			m1[j] = beta1*m1[j] + (1-beta1)*g
			m2[j] = beta2*m2[j] + (1-beta2)*g*g
			w[j] -= lr * (m1[j] / c1) / (math.Sqrt(m2[j]/c2) + 1e-8)
		}
	}
	h := SoftmaxHead{K: k, S: s, W: w[:k*s], B: w[k*s:]}
	for j := range h.W {
		h.W[j] *= scale
	}
	return h
}

// Logits writes the [n, K] logits of the n rows of z ([n, S]) into a new
// slice.
func (h SoftmaxHead) Logits(z []float64, n int) []float64 {
	out := make([]float64, n*h.K)
	for i := range n {
		copy(out[i*h.K:(i+1)*h.K], h.B)
	}
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, blas64.General{Rows: n, Cols: h.S, Stride: h.S, Data: z},
		blas64.General{Rows: h.K, Cols: h.S, Stride: h.S, Data: h.W}, 1, blas64.General{Rows: n, Cols: h.K, Stride: h.K, Data: out})
	return out
}

// SampleRows draws count rows from every Gaussian of protos with rng, in
// class order, as float64 [len(protos)*count, S] with their class indices.
func SampleRows(protos []Gaussian, count int, rng *rand.Rand) ([]float64, []int, error) {
	var x []float64
	var y []int
	for c, p := range protos {
		xc, err := p.Sample(rng, count)
		if err != nil {
			return nil, nil, fmt.Errorf("class %d: %w", c, err)
		}
		for _, v := range xc {
			x = append(x, float64(v))
		}
		for range count {
			y = append(y, c)
		}
	}
	return x, y, nil
}

// Head names the classifier over the prototypes (ClassifierOptions.Head).
type Head string

const (
	// HeadGaussian scores the Mahalanobis distance to each class's
	// Gaussian (the paper's classifier).
	HeadGaussian Head = "gaussian"
	// HeadSoftmax scores with a linear softmax fitted on samples of every
	// class's Gaussian (SoftmaxTables).
	HeadSoftmax Head = "softmax"
)

// The fit of HeadSoftmax (docs/method.md, "Classifier head"), fixed so that
// training, export and a model's added classes compute the same tables.
const (
	// HeadSamples is the number of samples drawn from each class's Gaussian.
	HeadSamples = 1000
	// HeadMaxClasses bounds the classes of a softmax head: its fit holds
	// HeadSamples x K rows and its time grows as K^2 (about 8 GFLOP at
	// K = 10, 800 at K = 100).
	HeadMaxClasses = 100
	headSeed       = 0x626963796348 // "bicycH": the samples' random stream
)

// headFit is how HeadSoftmax is fitted: measured on the validation split
// of the default job (docs/results/cold-start.md).
var headFit = SoftmaxFit{WeightDecay: 1e-4, Steps: 300}

// SoftmaxTables fits HeadSoftmax for protos and returns it in the form of
// the classifier's tables with the identity as every whitening matrix:
// means m_c = W_c/2 and biases b_c = -B_c - ||m_c||^2, so that
//
//	score_c(zh) = ||zh - m_c||^2 + b_c = ||zh||^2 - (W_c·zh + B_c)
//
// is the negative logit plus a term the same for every class: the class
// with the smallest score is the most probable one, and the exported
// graph needs no other form. The head is fitted on HeadSamples rows drawn
// from each N(mu_c, Sigma_c) (from a fixed random stream, so the same
// prototypes give the same head), L2-normalised when normalize, as the
// features are before the score; the classes are balanced by construction.
func SoftmaxTables(protos []Gaussian, normalize bool) (means, bias []float64, err error) {
	k := len(protos)
	if k > HeadMaxClasses {
		return nil, nil, fmt.Errorf("gauss: softmax head: %d classes, at most %d: %w", k, HeadMaxClasses, ErrShape)
	}
	s := protos[0].Dim()
	x, y, err := SampleRows(protos, HeadSamples, rand.New(rand.NewPCG(headSeed, uint64(k))))
	if err != nil {
		return nil, nil, fmt.Errorf("gauss: softmax head: %w", err)
	}
	if normalize {
		for i := 0; i < len(x); i += s {
			normalizeL2(x[i : i+s])
		}
	}
	h := FitSoftmaxHead(x, y, len(y), s, k, headFit)
	means = make([]float64, k*s)
	bias = make([]float64, k)
	for c := range k {
		m := means[c*s : (c+1)*s]
		var sq float64
		for j, w := range h.W[c*s : (c+1)*s] {
			m[j] = w / 2
			sq += m[j] * m[j]
		}
		bias[c] = -h.B[c] - sq
	}
	return means, bias, nil
}
