// Package optim holds the optimiser bicyc trains with: SGD with momentum, weight decay and global
// gradient-norm clipping, as a gorgonia Solver on the CPU. Its clipping rule (ClipScale) is shared with the
// GPU's SGD of package gpu/internal/cudaops, whose update kernel computes the same per-element arithmetic.
package optim

import (
	"fmt"
	"math"

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

// Step applies one update to every parameter in model.
func (s *SGD) Step(model []G.ValueGrad) error {
	if s.velocity == nil {
		s.velocity = make(map[*tensor.Dense][]float32)
	}
	ws := make([][]float32, len(model))
	gs := make([][]float32, len(model))
	dense := make([]*tensor.Dense, len(model))
	var sq float64
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
		for _, v := range gd {
			sq += float64(v) * float64(v)
		}
		ws[i], gs[i], dense[i] = wd, gd, w
	}
	s.LastNorm = math.Sqrt(sq)
	if err := NormError(s.LastNorm); err != nil {
		return err
	}
	scale := ClipScale(s.LastNorm, s.ClipNorm)
	mom, wdecay := float32(s.Momentum), float32(s.WeightDecay)
	for i := range ws {
		lr := float32(s.LR)
		if f, ok := s.LRScale[dense[i]]; ok {
			lr = float32(s.LR * f)
		}
		v := s.velocity[dense[i]]
		if v == nil {
			v = make([]float32, len(ws[i]))
			s.velocity[dense[i]] = v
		}
		w, g := ws[i], gs[i]
		for j := range w {
			d := g[j]*scale + wdecay*w[j]
			v[j] = mom*v[j] + d
			w[j] -= lr * v[j]
			// gorgonia accumulates gradients into the dual values across
			// runs; every solver zeroes them after using them.
			g[j] = 0
		}
	}
	return nil
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
