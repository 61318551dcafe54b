package cudaops

import (
	"errors"
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/gpu/internal/cuda"
	"github.com/bicyc/bicyc/models/optim"
)

// sumSquaresThreads bounds the partial sums of one parameter's squared gradient (kernel sum_squares): enough
// threads to fill a GPU for a large layer, few enough that downloading the partial sums costs little.
const sumSquaresThreads = 4096

// SGD is optim.SGD computed by NVRTC kernels (sum_squares for the global gradient norm, sgd_update for the
// update): the same fields and rule, with the momentum buffers kept on the device between steps. In this slice
// each Step uploads the weights and gradients, and downloads the weights after the update and the partial
// sums of the squared gradients (the norm decides the clipping and is reported as LastNorm); the host
// gradients are zeroed as optim.SGD zeroes them. Float32 parameters only. Not safe for concurrent use.
type SGD struct {
	LR, Momentum, WeightDecay, ClipNorm float64
	LastNorm                            float64
	LRScale                             map[*tensor.Dense]float64

	params        map[*tensor.Dense]*sgdParam
	sumSq, update *cuda.Kernel
}

// sgdParam is one parameter's device copies: weights, gradient, momentum and the partial sums of squares.
type sgdParam struct {
	w, g, v, partial *cuda.Buffer
	sums             []float64
}

var _ G.Solver = (*SGD)(nil)

// Step applies one update to every parameter in model, as optim.SGD.Step does.
func (s *SGD) Step(model []G.ValueGrad) error {
	r, err := cuda.Open()
	if err != nil {
		return fmt.Errorf("cuda sgd: %w", err)
	}
	if s.update == nil {
		if s.sumSq, err = kernel(r, "sum_squares"); err != nil {
			return fmt.Errorf("cuda sgd: %w", err)
		}
		if s.update, err = kernel(r, "sgd_update"); err != nil {
			return fmt.Errorf("cuda sgd: %w", err)
		}
	}
	if s.params == nil {
		s.params = map[*tensor.Dense]*sgdParam{}
	}
	ws, gs := make([]*tensor.Dense, len(model)), make([]*tensor.Dense, len(model))
	ps := make([]*sgdParam, len(model))
	var sq float64
	for i, vg := range model {
		w, g, err := sgdValues(i, vg)
		if err != nil {
			return err
		}
		p, err := s.param(r, w)
		if err != nil {
			return fmt.Errorf("cuda sgd: parameter %d: %w", i, err)
		}
		n := w.Shape().TotalSize()
		if err := cuda.Upload(p.g, g.Float32s()); err != nil {
			return fmt.Errorf("cuda sgd: gradient %d: %w", i, err)
		}
		threads := min(n, sumSquaresThreads)
		if err := s.sumSq.Launch(threads, p.g, p.partial, int32(n), int32(threads)); err != nil {
			return err
		}
		if err := cuda.Download(p.sums[:threads], p.partial); err != nil {
			return fmt.Errorf("cuda sgd: norm of gradient %d: %w", i, err)
		}
		for _, v := range p.sums[:threads] {
			sq += v
		}
		ws[i], gs[i], ps[i] = w, g, p
	}
	s.LastNorm = math.Sqrt(sq)
	if err := optim.NormError(s.LastNorm); err != nil {
		return err
	}
	scale := optim.ClipScale(s.LastNorm, s.ClipNorm)
	mom, wdecay := float32(s.Momentum), float32(s.WeightDecay)
	for i, w := range ws {
		lr := float32(s.LR)
		if f, ok := s.LRScale[w]; ok {
			lr = float32(s.LR * f)
		}
		p, n := ps[i], int32(w.Shape().TotalSize())
		if err := cuda.Upload(p.w, w.Float32s()); err != nil {
			return fmt.Errorf("cuda sgd: weights %d: %w", i, err)
		}
		if err := s.update.Launch(int(n), p.w, p.g, p.v, n, scale, wdecay, mom, lr); err != nil {
			return err
		}
		if err := cuda.Download(w.Float32s(), p.w); err != nil {
			return fmt.Errorf("cuda sgd: weights %d: %w", i, err)
		}
		clear(gs[i].Float32s()) // gorgonia accumulates gradients across runs, as in optim.SGD
	}
	return nil
}

// param returns w's device copies, allocated on its first step with a zero momentum.
func (s *SGD) param(r *cuda.Runtime, w *tensor.Dense) (*sgdParam, error) {
	if p, ok := s.params[w]; ok {
		return p, nil
	}
	n := w.Shape().TotalSize()
	p := &sgdParam{sums: make([]float64, min(n, sumSquaresThreads))}
	var err error
	for _, b := range []**cuda.Buffer{&p.w, &p.g, &p.v} {
		if *b, err = r.Alloc(4 * n); err != nil {
			return nil, errors.Join(err, p.free())
		}
	}
	if p.partial, err = r.Alloc(8 * len(p.sums)); err != nil {
		return nil, errors.Join(err, p.free())
	}
	if err := p.v.Zero(); err != nil {
		return nil, errors.Join(err, p.free())
	}
	s.params[w] = p
	return p, nil
}

// Free releases the device memory of every parameter; the momentum is lost (a later Step starts from zero).
func (s *SGD) Free() error {
	var errs []error
	for w, p := range s.params {
		errs = append(errs, p.free())
		delete(s.params, w)
	}
	return errors.Join(errs...)
}

func (p *sgdParam) free() error {
	return errors.Join(p.w.Free(), p.g.Free(), p.v.Free(), p.partial.Free())
}

// Velocity downloads the momentum buffer of w (nil if w has not been stepped), for checkpoints and tests.
func (s *SGD) Velocity(w *tensor.Dense) ([]float32, error) {
	p, ok := s.params[w]
	if !ok {
		return nil, nil
	}
	v := make([]float32, w.Shape().TotalSize())
	return v, cuda.Download(v, p.v)
}

// sgdValues returns parameter i's weights and gradient as float32 tensors of the same size, with
// optim.SGD's errors.
func sgdValues(i int, vg G.ValueGrad) (w, g *tensor.Dense, err error) {
	w, ok := vg.Value().(*tensor.Dense)
	if !ok {
		return nil, nil, fmt.Errorf("cuda sgd: parameter %d is %T, want *tensor.Dense", i, vg.Value())
	}
	gv, err := vg.Grad()
	if err != nil {
		return nil, nil, fmt.Errorf("cuda sgd: gradient of parameter %d: %w", i, err)
	}
	g, ok = gv.(*tensor.Dense)
	if !ok {
		return nil, nil, fmt.Errorf("cuda sgd: gradient of parameter %d is %T, want *tensor.Dense", i, gv)
	}
	if w.Dtype() != tensor.Float32 || g.Dtype() != tensor.Float32 || w.Shape().TotalSize() != g.Shape().TotalSize() ||
		w.RequiresIterator() || g.RequiresIterator() {
		return nil, nil, fmt.Errorf("cuda sgd: parameter %d: want contiguous float32 weights and gradients of equal size", i)
	}
	return w, g, nil
}
