package classgraph

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
)

// ShortlistCheckSamples is how many features PlanShortlist scores: one
// drawn from each of that many classes picked at random.
const ShortlistCheckSamples = 1000

// ShortlistCheckTop1 is the share of the check's features whose exact
// closest class a shortlist must keep to be adopted: the bar for
// the default, 99.9 %.
const ShortlistCheckTop1 = 0.999

// ShortlistMaxShare bounds a shortlist's size to this share of the
// classes: beyond it the exact rescoring reads about as much as the
// exact scores of every class would.
const ShortlistMaxShare = 0.125

// checkRows and checkTable bound the check's float32 scratch: it scores
// checkRows features at a time against as many classes as keep a chunk of
// the table to checkTable values (512 classes at S = 64, 31 at S = 512,
// where one class's row has 131,840 values).
const (
	checkRows  = 250
	checkTable = 1 << 20
)

// PlanShortlist chooses the shortlist of tables t, whose classes'
// Gaussians are protos (score order), starting from n classes scored
// exactly (gauss.ClassifierOptions.ShortlistSize). Whether a shortlist
// keeps the exact closest class depends on the features: on Fashion-MNIST
// models it did for 99.98 % of the test images at 5000 classes with
// n = 128, on a random network's features, whose class scores lie closer
// than the int8 table resolves, for 53 % (docs/classes.md). So before a
// model directory gets one, PlanShortlist draws ShortlistCheckSamples
// features from the class Gaussians, scores them exactly and with the
// Shortlist graph's int8 arithmetic (replayed in Go, float32), and doubles
// n until the shortlist keeps the exact closest class of
// ShortlistCheckTop1 of them. Sizes above ShortlistMaxShare of the classes
// are not tried; the result's Size is then 0, and the directory scores
// every class exactly. The draw is seeded by the class count, so the same
// tables give the same plan. Errors wrap ErrTables.
func PlanShortlist(t gauss.ClassifierTables, protos []gauss.Gaussian, n int) (*bundle.Shortlist, error) {
	if err := validateTables(t); err != nil {
		return nil, err
	}
	q, err := newScoring(t).expanded()
	if err != nil {
		return nil, err
	}
	return planShortlist(q, protos, n)
}

// planShortlist is PlanShortlist of the expanded tables q.
func planShortlist(q *gauss.QuadraticTables, protos []gauss.Gaussian, n int) (*bundle.Shortlist, error) {
	if len(protos) != q.K {
		return nil, fmt.Errorf("%w: %d Gaussians for %d classes", ErrTables, len(protos), q.K)
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: shortlist of %d classes, want >= 1", ErrTables, n)
	}
	rng := rand.New(rand.NewPCG(uint64(q.K), 0x5107))
	z := make([]float32, 0, ShortlistCheckSamples*q.S)
	for range ShortlistCheckSamples {
		c := rng.IntN(q.K)
		x, err := protos[c].Sample(rng, 1)
		if err != nil {
			return nil, fmt.Errorf("%w: class %d: %w", ErrTables, c, err)
		}
		z = append(z, x...)
	}
	ranks := shortlistRanks(q, z)
	largest := max(n, int(ShortlistMaxShare*float64(q.K)))
	for size := n; ; size *= 2 {
		size = min(size, largest)
		kept := keptShare(ranks, size)
		if kept >= ShortlistCheckTop1 {
			return &bundle.Shortlist{Size: size, CheckSamples: len(ranks), CheckTop1: kept}, nil
		}
		if size == largest {
			return &bundle.Shortlist{CheckSamples: len(ranks), CheckTop1: kept}, nil
		}
	}
}

// keptShare is the share of ranks below size.
func keptShare(ranks []int, size int) float64 {
	kept := 0
	for _, r := range ranks {
		if r < size {
			kept++
		}
	}
	return float64(kept) / float64(len(ranks))
}

// ShortlistRanks returns, for each feature row of z ([M, S] row-major),
// the rank of its exact closest class among the Shortlist graph's
// approximate scores: the number of classes whose approximate score is
// below that class's. A shortlist of n keeps the exact closest class of
// a row exactly when its rank is below n. The approximation is the
// graph's (newShortlistTable, DynamicQuantizeLinear of phi's two blocks)
// replayed in float32 in Go. It panics if z is not a whole number of
// rows.
func ShortlistRanks(t gauss.ClassifierTables, z []float32) []int {
	q := t.Quadratic()
	return shortlistRanks(&q, z)
}

// shortlistRanks is ShortlistRanks of the expanded tables q, checkRows
// features at a time.
func shortlistRanks(q *gauss.QuadraticTables, z []float32) []int {
	st := newShortlistTable(q)
	s := q.S
	if len(z)%s != 0 {
		panic(fmt.Sprintf("classgraph: %d feature values are not rows of %d", len(z), s))
	}
	var ranks []int
	for start := 0; start < len(z); start += checkRows * s {
		ranks = append(ranks, rankRows(q, &st, z[start:min(len(z), start+checkRows*s)])...)
	}
	return ranks
}

// rankRows is shortlistRanks of a few feature rows z, with the shortlist
// table st of q.
func rankRows(q *gauss.QuadraticTables, st *shortlistTable, z []float32) []int {
	k, s, d := q.K, q.S, gauss.QuadraticDim(q.S)
	chunk := max(1, min(k, checkTable/d))
	m := len(z) / s
	phi := make([]float32, m*d)    // exact quadratic features
	approx := make([]float32, m*d) // their dequantised int8 values
	base := make([]float32, m)     // phi . mean
	for i := range m {
		row, qrow := phi[i*d:(i+1)*d], approx[i*d:(i+1)*d]
		quadraticRow(z[i*s:(i+1)*s], q, row)
		dequantize(row[:d-s], qrow[:d-s])
		dequantize(row[d-s:], qrow[d-s:])
		var sum float32
		for j, v := range row {
			sum += v * st.mean[j]
		}
		base[i] = sum
	}
	best := make([]int, m)
	bestScore := make([]float32, m)
	for i := range bestScore {
		bestScore[i] = float32(math.Inf(1))
	}
	scratch := make([]float32, m*chunk)
	forChunks(k, chunk, func(c0, c1 int) {
		out := blas32.General{Rows: m, Cols: c1 - c0, Stride: c1 - c0, Data: scratch[:m*(c1-c0)]}
		blas32.Gemm(blas.NoTrans, blas.Trans, 1, blas32.General{Rows: m, Cols: d, Stride: d, Data: phi},
			blas32.General{Rows: c1 - c0, Cols: d, Stride: d, Data: q.Coef[c0*d : c1*d]}, 0, out)
		for i := range m {
			for c := c0; c < c1; c++ {
				if v := out.Data[i*out.Stride+c-c0] + q.Const[c]; v < bestScore[i] {
					bestScore[i], best[i] = v, c
				}
			}
		}
	})
	// The residual table as float32 [K, D], a chunk of classes at a time.
	resid := make([]float32, chunk*d)
	approxScores := func(c0, c1 int) blas32.General {
		for c := c0; c < c1; c++ {
			for j := range d {
				resid[(c-c0)*d+j] = float32(int8(st.resid[j*k+c]))
			}
		}
		out := blas32.General{Rows: m, Cols: c1 - c0, Stride: c1 - c0, Data: scratch[:m*(c1-c0)]}
		blas32.Gemm(blas.NoTrans, blas.Trans, 1, blas32.General{Rows: m, Cols: d, Stride: d, Data: approx},
			blas32.General{Rows: c1 - c0, Cols: d, Stride: d, Data: resid[:(c1-c0)*d]}, 0, out)
		for i := range m {
			for c := c0; c < c1; c++ {
				out.Data[i*out.Stride+c-c0] = out.Data[i*out.Stride+c-c0]*st.scale[c] + base[i] + q.Const[c]
			}
		}
		return out
	}
	// The approximate score of each row's exact best class, then its rank.
	target := make([]float32, m)
	for i, c := range best {
		var dot float32
		for j, v := range approx[i*d : (i+1)*d] {
			dot += v * float32(int8(st.resid[j*k+c]))
		}
		target[i] = dot*st.scale[c] + base[i] + q.Const[c]
	}
	ranks := make([]int, m)
	forChunks(k, chunk, func(c0, c1 int) {
		out := approxScores(c0, c1)
		for i := range m {
			for c := c0; c < c1; c++ {
				// The class itself is skipped: its score here sums in
				// another order than target's.
				if c != best[i] && out.Data[i*out.Stride+c-c0] < target[i] {
					ranks[i]++
				}
			}
		}
	})
	return ranks
}

// forChunks calls f on [c0, c1) chunks of chunk classes covering k.
func forChunks(k, chunk int, f func(c0, c1 int)) {
	for c0 := 0; c0 < k; c0 += chunk {
		f(c0, min(k, c0+chunk))
	}
}

// quadraticRow writes phi(zh - center) of gauss.QuadraticTables for one
// feature z into out ([D]), normalising z first when q does, in float32
// as the graph computes it.
func quadraticRow(z []float32, q *gauss.QuadraticTables, out []float32) {
	zh := z
	if q.Normalize {
		var sq float64
		for _, v := range z {
			sq += float64(v) * float64(v)
		}
		scale := 1 / float32(max(math.Sqrt(sq), gauss.NormEpsilon))
		zh = make([]float32, len(z))
		for i, v := range z {
			zh[i] = v * scale
		}
	}
	gauss.QuadraticFeatures(zh, q.Center, out)
}

// dequantize writes x's values after ONNX's DynamicQuantizeLinear
// (uint8, one scale and zero point for the whole of x, rounding half to
// even) and back: (q - zero) * scale.
func dequantize(x, out []float32) {
	lo, hi := float32(0), float32(0)
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	scale := (hi - lo) / 255
	if scale == 0 {
		clear(out)
		return
	}
	zero := clampByte(float32(math.RoundToEven(float64(-lo / scale))))
	for i, v := range x {
		qv := clampByte(float32(math.RoundToEven(float64(v/scale))) + zero)
		out[i] = (qv - zero) * scale
	}
}

// clampByte saturates v to [0, 255].
func clampByte(v float32) float32 { return min(255, max(0, v)) }
