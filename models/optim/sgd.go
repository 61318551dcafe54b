// Package optim holds the optimiser bicyc trains with: SGD with momentum, weight decay and global
// gradient-norm clipping, as a gorgonia Solver on the CPU. Its clipping rule (ClipScale) is shared with the
// GPU's SGD of package gpu/internal/cudaops, whose update kernel computes the same per-element arithmetic.
package optim

import (
	"fmt"
	"math"
	"sync"

	"github.com/bicyc/bicyc/models/ops"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// SGD is stochastic gradient descent with momentum, weight decay and
// global gradient-norm clipping, with PyTorch's semantics (docs/method.md: SGD
// momentum 0.9, weight decay 5e-4, clipping at 1.0 over all trained
// parameters together):
//
//	g  = grad * min(1, clip / (||grad||_all + 1e-6))
//	g += weightDecay * w
//	v  = momentum * v + g
//	w -= lr * scale(w) * v        (scale 1 unless LRScale holds w)
//
// It implements gorgonia's Solver interface. gorgonia's own Momentum solver
// is not used because it applies L2 regularisation to the velocity instead
// of the weights, has no per-step learning rate, and clips per element, not
// by global norm. SGD updates weights in place, so every graph that binds
// the same *tensor.Dense sees the new values. Not safe for concurrent use.
type SGD struct {
	LR, Momentum, WeightDecay float64
	// ClipNorm bounds the global L2 norm of all gradients of one Step; 0 disables clipping.
	ClipNorm float64
	// LastNorm is the global gradient norm seen by the last Step, before clipping.
	LastNorm float64
	// LRScale multiplies LR for the parameters it holds (a split learning rate: a pretrained backbone's
	// layers at a fraction of the heads' rate); others use LR itself. Clipping stays global.
	LRScale map[*tensor.Dense]float64

	velocity map[*tensor.Dense][]float32
}

var _ G.Solver = (*SGD)(nil)

// Step applies one update to every parameter in model. The sum of squares and the update run over
// ops.Threads() goroutines, each on a fixed stretch of the parameters (stepRanges): ResNet-18's 11 million
// parameters took about 27 ms per step on one thread (1.4 % of a 3x32x32 step's CPU time, all of it serial,
// so twice that of its wall time on two cores; 4 % of the layer4-only 224x224 step's).
func (s *SGD) Step(model []G.ValueGrad) error {
	if s.velocity == nil {
		s.velocity = make(map[*tensor.Dense][]float32)
	}
	params := make([]sgdParam, len(model))
	total := 0
	for i, vg := range model {
		w, ok := vg.Value().(*tensor.Dense)
		if !ok {
			return fmt.Errorf("sgd: parameter %d is %T, want *tensor.Dense", i, vg.Value())
		}
		gv, err := vg.Grad()
		if err != nil {
			return fmt.Errorf("sgd: gradient of parameter %d: %w", i, err)
		}
		g, ok := gv.(*tensor.Dense)
		if !ok {
			return fmt.Errorf("sgd: gradient of parameter %d is %T, want *tensor.Dense", i, gv)
		}
		wd, ok1 := w.Data().([]float32)
		gd, ok2 := g.Data().([]float32)
		if !ok1 || !ok2 || len(wd) != len(gd) {
			return fmt.Errorf("sgd: parameter %d: want float32 weights and gradients of equal size", i)
		}
		v := s.velocity[w]
		if v == nil {
			v = make([]float32, len(wd))
			s.velocity[w] = v
		}
		lr := float32(s.LR)
		if f, ok := s.LRScale[w]; ok {
			lr = float32(s.LR * f)
		}
		params[i] = sgdParam{w: wd, g: gd, v: v, lr: lr}
		total += len(wd)
	}
	ranges := stepRanges(params, total, ops.Threads())
	partial := make([]float64, len(ranges))
	inParallel(len(ranges), func(r int) {
		for _, p := range ranges[r] {
			partial[r] += sumSquares(p.g)
		}
	})
	var sq float64
	for _, p := range partial { // in range order: the norm does not depend on the goroutines' timing
		sq += p
	}
	s.LastNorm = math.Sqrt(sq)
	if err := NormError(s.LastNorm); err != nil {
		return err
	}
	scale := ClipScale(s.LastNorm, s.ClipNorm)
	mom, wdecay := float32(s.Momentum), float32(s.WeightDecay)
	inParallel(len(ranges), func(r int) {
		for _, p := range ranges[r] {
			update(p, scale, mom, wdecay)
		}
	})
	return nil
}

// sgdParam is a parameter's weights, gradient and velocity (or the same stretch of the three) and its
// learning rate.
type sgdParam struct {
	w, g, v []float32
	lr      float32
}

// stepRanges splits the params, total elements in all, into at most threads stretches of about equal
// size, each a list of whole parameters or pieces of them; the split depends only on the sizes.
func stepRanges(params []sgdParam, total, threads int) [][]sgdParam {
	// Below this many elements per goroutine, starting one costs more than it saves.
	const minPerThread = 1 << 15
	threads = max(1, min(threads, total/minPerThread))
	ranges := make([][]sgdParam, threads)
	per := (total + threads - 1) / threads
	r, room := 0, per
	for _, p := range params {
		for len(p.w) > 0 {
			n := min(len(p.w), room)
			if r == threads-1 {
				n = len(p.w)
			}
			ranges[r] = append(ranges[r], sgdParam{w: p.w[:n], g: p.g[:n], v: p.v[:n], lr: p.lr})
			p.w, p.g, p.v = p.w[n:], p.g[n:], p.v[n:]
			if room -= n; room == 0 && r < threads-1 {
				r, room = r+1, per
			}
		}
	}
	return ranges
}

// inParallel calls body(0..n-1), each on its own goroutine but the first, and waits for all of them.
func inParallel(n int, body func(i int)) {
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(i)
		}()
	}
	if n > 0 {
		body(0)
	}
	wg.Wait()
}

// sumSquares returns the sum of the squares of g in float64, with four accumulators so that the additions
// do not wait on one another.
func sumSquares(g []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(g); i += 4 {
		q := g[i : i+4 : i+4]
		a, b, c, d := float64(q[0]), float64(q[1]), float64(q[2]), float64(q[3])
		s0, s1, s2, s3 = s0+a*a, s1+b*b, s2+c*c, s3+d*d
	}
	for _, v := range g[i:] {
		s0 += float64(v) * float64(v)
	}
	return (s0 + s1) + (s2 + s3)
}

// update applies the step to one stretch of a parameter and zeroes its gradient: gorgonia accumulates
// gradients into the dual values across runs, so every solver zeroes them after using them.
func update(p sgdParam, scale, mom, wdecay float32) {
	w := p.w
	g, v := p.g[:len(w)], p.v[:len(w)]
	for j := range w {
		d := g[j]*scale + wdecay*w[j]
		v[j] = mom*v[j] + d
		w[j] -= p.lr * v[j]
		g[j] = 0
	}
}

// ClipScale is the factor SGD multiplies every gradient of a step by: min(1, clip/(norm + 1e-6)) when
// clipping is on (clip > 0), applied only when norm exceeds clip, else 1.
func ClipScale(norm, clip float64) float32 {
	if clip > 0 && norm > clip {
		return float32(clip / (norm + 1e-6))
	}
	return 1
}

// NormError returns the error of a step whose global gradient norm is not finite, or nil.
func NormError(norm float64) error {
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return fmt.Errorf("sgd: gradient norm is %v", norm)
	}
	return nil
}
