package train

import (
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/models/ops"
)

// adapterGraph trains A on cached feature pairs (METHOD.md "Stage II" step 1):
//
//	L = MSE(A(z_old), z_new) + alpha * L_ac(A(z_old))
type adapterGraph struct {
	zOld, zNew *tensor.Dense
	terms      []lossTerm
	params     G.Nodes
	vm         G.VM
}

func buildAdapterGraph(cfg config.Config, a *models.Mapper, rows, s int) (*adapterGraph, error) {
	g := G.NewGraph()
	ag := &adapterGraph{
		zOld: tensor.New(tensor.WithShape(rows, s), tensor.Of(tensor.Float32)),
		zNew: tensor.New(tensor.WithShape(rows, s), tensor.Of(tensor.Float32)),
	}
	zo := G.NewMatrix(g, tensor.Float32, G.WithShape(rows, s), G.WithName("z_old"), G.WithValue(ag.zOld))
	zn := G.NewMatrix(g, tensor.Float32, G.WithShape(rows, s), G.WithName("z_new"), G.WithValue(ag.zNew))
	bound := bindMapper(a, g)
	az, err := bound.apply(zo)
	if err != nil {
		return nil, err
	}
	align, err := mse(az, zn)
	if err != nil {
		return nil, err
	}
	ag.terms = []lossTerm{newLossTerm("o2n", align)}
	total := align
	if cfg.Loss.AntiCollapse && cfg.AdapterAlpha() > 0 {
		ac, err := ops.AntiCollapse(az, ops.AntiCollapseOptions{Beta: cfg.Loss.Beta, Shrink: cfg.Loss.ACShrink, Jitter: cfg.Loss.ACJitter})
		if err != nil {
			return nil, err
		}
		ag.terms = append(ag.terms, newLossTerm("ac", ac))
		wac, err := weighted(ac, cfg.AdapterAlpha())
		if err != nil {
			return nil, err
		}
		if total, err = G.Add(total, wac); err != nil {
			return nil, err
		}
	}
	if _, err := G.Grad(total, bound.params...); err != nil {
		return nil, fmt.Errorf("adapter gradients: %w", err)
	}
	ag.params = bound.params
	ag.vm = G.NewTapeMachine(g, G.BindDualValues(bound.params...))
	return ag, nil
}

// trainAdapter runs epochs of SGD on A over the n cached pairs (zOld, zNew),
// in shuffled mini-batches with drop_last, and returns the last epoch's mean
// alignment loss.
func trainAdapter(cfg config.Config, a *models.Mapper, zOld, zNew []float32, n, s, epochs int, rng *rand.Rand, progress func(epoch int, loss float64)) (float64, error) {
	rows := min(cfg.Train.BatchSize, n)
	if rows < 2 {
		return 0, fmt.Errorf("adapter fine-tune: %d feature rows, need at least 2", n)
	}
	ag, err := buildAdapterGraph(cfg, a, rows, s)
	if err != nil {
		return 0, err
	}
	defer ag.vm.Close()
	solver := &SGD{LR: cfg.Adapter.LR, Momentum: cfg.Train.Momentum, WeightDecay: cfg.Train.WeightDecay, ClipNorm: cfg.Train.ClipNorm}
	zo, zn := ag.zOld.Data().([]float32), ag.zNew.Data().([]float32)
	var last float64
	for epoch := 0; epoch < epochs; epoch++ {
		perm := rng.Perm(n)
		var sum float64
		steps := n / rows
		for b := 0; b < steps; b++ {
			for i := 0; i < rows; i++ {
				j := perm[b*rows+i]
				copy(zo[i*s:(i+1)*s], zOld[j*s:(j+1)*s])
				copy(zn[i*s:(i+1)*s], zNew[j*s:(j+1)*s])
			}
			if err := ag.vm.RunAll(); err != nil {
				return 0, err
			}
			v := ag.terms[0].current()
			for _, t := range ag.terms {
				if tv := t.current(); math.IsNaN(tv) || math.IsInf(tv, 0) {
					ag.vm.Reset()
					return 0, fmt.Errorf("adapter fine-tune: loss %s is %v at epoch %d", t.name, tv, epoch+1)
				}
			}
			err := solver.Step(G.NodesToValueGrads(ag.params))
			ag.vm.Reset()
			if err != nil {
				return 0, fmt.Errorf("adapter fine-tune: %w", err)
			}
			sum += v
		}
		last = sum / float64(steps)
		if progress != nil {
			progress(epoch, last)
		}
	}
	return last, nil
}

// mapperFunc returns A as a batched gauss.FeatureMap: a fixed-size
// evaluation graph that maps rows of features, padding the last chunk.
func mapperFunc(a *models.Mapper, s, chunk int) (gauss.FeatureMap, func(), error) {
	g := G.NewGraph()
	in := tensor.New(tensor.WithShape(chunk, s), tensor.Of(tensor.Float32))
	x := G.NewMatrix(g, tensor.Float32, G.WithShape(chunk, s), G.WithName("z_old"), G.WithValue(in))
	bound := bindMapper(a, g)
	out, err := bound.apply(x)
	if err != nil {
		return nil, nil, err
	}
	vm := G.NewTapeMachine(g)
	buf := in.Data().([]float32)
	f := func(z []float32, n int) ([]float32, error) {
		if len(z) != n*s {
			return nil, fmt.Errorf("adapter: %d values for %d rows of %d", len(z), n, s)
		}
		res := make([]float32, n*s)
		for start := 0; start < n; start += chunk {
			m := min(chunk, n-start)
			copy(buf, z[start*s:(start+m)*s])
			clear(buf[m*s:])
			if err := vm.RunAll(); err != nil {
				return nil, err
			}
			copy(res[start*s:(start+m)*s], out.Value().Data().([]float32)[:m*s])
			vm.Reset()
		}
		return res, nil
	}
	return f, func() { vm.Close() }, nil
}

// classStatistics estimates a Gaussian prototype from the rows of feats
// (METHOD.md "Stage II" step 3: mean and unbiased covariance + 1e-8 I).
// A class with fewer than two feature rows gets the documented diagonal
// fallback of package gauss instead of an error.
func classStatistics(feats []float32, n, s int, priorVariance float64) (gauss.Gaussian, error) {
	if n >= 2 {
		return gauss.Estimate(feats, n, s)
	}
	return gauss.EstimateDiagonal(feats, n, s, priorVariance)
}
