package infer

import (
	"errors"
	"fmt"
	"math"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
)

// ErrNotCalibrated is returned by Open when WithAcceptRate asks for an
// acceptance rate but the model has no calibration (it was exported
// without held-out images): set WithUnknownThreshold instead.
var ErrNotCalibrated = errors.New("model has no calibration")

// openSet turns one image's scores into the calibrated part of a Result.
type openSet struct {
	cal       *gauss.Calibration // nil: the model has no calibration
	bias      []float32          // b_c of the classifier tables
	column    map[int]int        // class ID -> score column
	threshold float64            // unknown when the unknown score exceeds it; +Inf: never
	rate      float64            // the acceptance rate threshold gives; 0 when not calibrated for it
}

// newOpenSet picks the threshold: WithUnknownThreshold if set, else the
// WithAcceptRate quantile of the model's calibration, else the manifest's
// default; without calibration and an explicit threshold, nothing is ever
// unknown.
func newOpenSet(b *bundle.Bundle, cfg *config) (openSet, error) {
	o := openSet{bias: b.Prototypes.Bias, threshold: math.Inf(1), column: make(map[int]int, len(b.Manifest.Classes))}
	for i, c := range b.Manifest.Classes {
		o.column[c.ID] = i
	}
	mc := b.Manifest.Calibration
	if mc != nil {
		c := mc.Gauss()
		o.cal = &c
		o.threshold, o.rate = mc.Threshold, mc.AcceptRate
	}
	switch {
	case cfg.threshold > 0:
		o.threshold, o.rate = cfg.threshold, 0
	case cfg.acceptRate > 0 && o.cal == nil:
		return openSet{}, fmt.Errorf("model %s: %w: an acceptance rate needs a model exported with held-out images; set an explicit unknown threshold instead", b.Dir, ErrNotCalibrated)
	case cfg.acceptRate > 0:
		o.threshold, o.rate = o.cal.Threshold(cfg.acceptRate), cfg.acceptRate
	}
	return o, nil
}

// apply fills r's probabilities, confidence, unknown score and verdict
// from the image's scores over all K classes.
func (o *openSet) apply(scores []float32, r *Result) {
	if o.cal == nil {
		u := math.Inf(1)
		for c, d := range scores {
			u = min(u, float64(d-o.bias[c]))
		}
		r.UnknownScore = max(u, 0)
	} else {
		post := o.cal.Posterior(scores)
		for i := range r.Predictions {
			r.Predictions[i].Probability = post[o.column[r.Predictions[i].ClassID]]
		}
		r.Confidence = r.Predictions[0].Probability
		r.UnknownScore = o.cal.UnknownScore(scores, o.bias)
	}
	r.Unknown = r.UnknownScore > o.threshold
}
