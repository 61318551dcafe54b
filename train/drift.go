package train

import (
	"fmt"

	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/metrics"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/rundir"
)

// driftEpsilon regularises both covariances of the symmetric KL (the
// paper's "small eps"), relative to the stored covariance's mean variance:
// learned features have near-constant directions, and an absolute 1e-6
// let those dominate the KL (values near 1e6).
const driftEpsilon = 1e-2

func (r *Run) drift(t int, old, cur *models.Backbone) (*rundir.Drift, error) {
	s := r.cfg.Model.FeatureDim
	var d rundir.Drift
	first := r.stream.Tasks[0]
	for _, c := range first {
		idx := r.testIndices([]int{c})
		z, err := features(cur, r.test, idx, r.prep, r.cfg.Train.EvalBatch, false)
		if err != nil {
			return nil, err
		}
		test, err := classStatistics(z, len(idx), s, 1)
		if err != nil {
			return nil, fmt.Errorf("drift: class %d: %w", c, err)
		}
		stored := r.state.Prototypes[c]
		st, err := gauss.Drift(stored, test, driftEpsilon*gauss.MeanVariance([]gauss.Gaussian{stored}))
		if err != nil {
			return nil, fmt.Errorf("drift: class %d: %w", c, err)
		}
		d.MeanL2 += st.MeanL2 / float64(len(first))
		d.CovFrobenius += st.CovFrobenius / float64(len(first))
		d.SymmetricKL += st.SymmetricKL / float64(len(first))
	}
	if t > 0 {
		idx := r.testIndices(r.stream.Tasks[t])
		zOld, err := features(old, r.test, idx, r.prep, r.cfg.Train.EvalBatch, false)
		if err != nil {
			return nil, err
		}
		zNew, err := features(cur, r.test, idx, r.prep, r.cfg.Train.EvalBatch, false)
		if err != nil {
			return nil, err
		}
		res, err := metrics.AD(zOld, zNew, len(idx), s)
		if err != nil {
			return nil, fmt.Errorf("drift: AD-%%: %w", err)
		}
		ad := res.Percent
		d.ADPercent = &ad
	}
	return &d, nil
}
