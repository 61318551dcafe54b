package train

import (
	"fmt"

	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/models"
)

// adapterEnsemble trains adapter.ensemble - 1 adapters from fresh
// initialisations on the task's feature pairs, each as adagauss trains its
// post-task adapter (post-task epochs, at least adapter.min_steps steps),
// and returns the mean of A's output and theirs as one feature map
// (docs/method.md, Adapter ensemble), with the function that releases the
// members' evaluation graphs. The members serve this task's transport only:
// the run keeps A.
func (r *Run) adapterEnsemble(t int, p featurePairs, zOld []float32, aMap gauss.FeatureMap) (gauss.FeatureMap, func(), error) {
	cfg := r.cfg
	s := cfg.Model.FeatureDim
	epochs := epochsForSteps(cfg.PostTaskAdapterEpochs(), adapterStepsPerEpoch(cfg, p.rows), cfg.Adapter.MinSteps)
	members := []gauss.FeatureMap{aMap}
	var closers []func()
	release := func() {
		for _, c := range closers {
			c()
		}
	}
	bar := r.newBar((cfg.Adapter.Ensemble-1)*epochs, fmt.Sprintf("task %d ensemble", t+1))
	defer bar.Finish()
	for m := 1; m < cfg.Adapter.Ensemble; m++ {
		member, err := models.NewMapper(mapperKind(cfg.Model), s, cfg.Model.HiddenMult, r.rng(fmt.Sprintf("ensemble-%d", m), t))
		if err != nil {
			release()
			return nil, nil, err
		}
		if _, err := trainAdapter(cfg, member, zOld, p.zNew, p.rows, s, epochs, r.rng(fmt.Sprintf("ensemble-stage2-%d", m), t), func(int, float64) { bar.Add(1) }); err != nil {
			release()
			return nil, nil, fmt.Errorf("ensemble adapter %d: %w", m+1, err)
		}
		f, done, err := mapperFunc(member, s, 1000)
		if err != nil {
			release()
			return nil, nil, err
		}
		members = append(members, f)
		closers = append(closers, done)
	}
	return meanMap(members, s), release, nil
}

// meanMap returns the feature map whose output is the mean of the maps'
// outputs, row by row, accumulated in float64.
func meanMap(maps []gauss.FeatureMap, s int) gauss.FeatureMap {
	return func(z []float32, n int) ([]float32, error) {
		sum := make([]float64, n*s)
		for i, f := range maps {
			out, err := f(z, n)
			if err != nil {
				return nil, fmt.Errorf("ensemble member %d: %w", i+1, err)
			}
			if len(out) != n*s {
				return nil, fmt.Errorf("ensemble member %d: %d values for %d rows of %d", i+1, len(out), n, s)
			}
			for j, v := range out {
				sum[j] += float64(v)
			}
		}
		res := make([]float32, n*s)
		for j, v := range sum {
			res[j] = float32(v / float64(len(maps)))
		}
		return res, nil
	}
}
