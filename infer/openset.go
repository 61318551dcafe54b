package infer

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
)

// ErrNotCalibrated is returned by Open when WithAcceptRate asks for an
// acceptance rate, or WithUnknownScore for a score, but the model has no
// calibration (it was exported without held-out images): set
// WithUnknownThreshold instead.
var ErrNotCalibrated = errors.New("model has no calibration")

// openSet turns one image's scores (and feature, for the scores that read
// it) into the calibrated part of a Result.
type openSet struct {
	cal       *gauss.Calibration // nil: the model has no calibration
	scorer    *gauss.OpenSet     // nil without calibration
	score     gauss.UnknownScore // the score Results report
	bias      []float32          // b_c of the classifier tables
	column    map[int]int        // class ID -> score column
	threshold float64            // unknown when the unknown score exceeds it; +Inf: never
	rate      float64            // the acceptance rate threshold gives; 0 when not calibrated for it
}

// newOpenSet picks the score (WithUnknownScore, else the manifest's) and
// the threshold: WithUnknownThreshold if set, else the WithAcceptRate
// quantile of the score's held-out values, else the manifest's default
// rate's; without calibration and an explicit threshold, nothing is ever
// unknown.
func newOpenSet(b *bundle.Bundle, cfg *config) (openSet, error) {
	o := openSet{bias: b.Prototypes.Bias, threshold: math.Inf(1), column: make(map[int]int, len(b.Manifest.Classes)),
		score: gauss.ScoreNearestDistance}
	for i, c := range b.Manifest.Classes {
		o.column[c.ID] = i
	}
	mc := b.Manifest.Calibration
	if mc == nil {
		switch {
		case cfg.acceptRate > 0:
			return openSet{}, fmt.Errorf("model %s: %w: an acceptance rate needs a model exported with held-out images; set an explicit unknown threshold instead", b.Dir, ErrNotCalibrated)
		case cfg.score != "" && cfg.score != gauss.ScoreNearestDistance:
			return openSet{}, fmt.Errorf("model %s: %w: unknown score %s needs a model exported with held-out images; its only score is %s", b.Dir, ErrNotCalibrated, cfg.score, gauss.ScoreNearestDistance)
		case cfg.threshold > 0:
			o.threshold = cfg.threshold
		}
		return o, nil
	}
	c := mc.Gauss()
	o.cal = &c
	o.score, o.threshold, o.rate = b.Manifest.UnknownScore(), mc.Threshold, mc.AcceptRate
	if cfg.score != "" && cfg.score != o.score {
		o.score = cfg.score
		if cfg.threshold == 0 && cfg.acceptRate == 0 {
			cfg.acceptRate = mc.AcceptRate // the manifest's rate, for the asked score
		}
	}
	var err error
	switch {
	case cfg.threshold > 0:
		o.threshold, o.rate = cfg.threshold, 0
	case cfg.acceptRate > 0:
		if o.threshold, err = c.ThresholdOf(o.score, cfg.acceptRate); err != nil {
			return openSet{}, fmt.Errorf("model %s: %w", b.Dir, err)
		}
		o.rate = cfg.acceptRate
	}
	if o.scorer, err = bundle.NewOpenSet(b.Manifest.Classes, b.Prototypes, c, b.Manifest.Classifier); err != nil {
		return openSet{}, fmt.Errorf("model %s: %w", b.Dir, err)
	}
	return o, nil
}

// needsFeature reports whether apply reads the backbone feature.
func (o *openSet) needsFeature() bool { return o.scorer != nil && o.score.NeedsFeature() }

// apply fills r's probabilities, confidence, unknown score and verdict
// from the image's scores over all K classes and its backbone feature z
// (nil unless needsFeature).
func (o *openSet) apply(scores, z []float32, r *Result) {
	r.UnknownScoreName = string(o.score)
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
		r.UnknownScore = o.scorer.Score(o.score, scores, z)
	}
	r.Unknown = r.UnknownScore > o.threshold
}

// UnknownScore returns the score Results report in UnknownScore: the
// WithUnknownScore option's, else the manifest's (gauss.ScoreMahalanobis
// for a model calibrated before scores could be chosen,
// gauss.ScoreNearestDistance for one without calibration).
func (c *Classifier) UnknownScore() gauss.UnknownScore { return c.openSet.score }

// UnknownScores returns every gauss.UnknownScore of each prepared input,
// [len(inputs)][len(gauss.UnknownScores())] in that list's order, so that a
// caller can compare the scores on its own images (as bench/openset does)
// before choosing one with WithUnknownScore. It needs a calibrated model
// (ErrNotCalibrated otherwise); ctx stops the run as in ClassifyBatch, and
// the scores are computed as ClassifyBatch computes them (under a
// shortlist, from approximate scores of the classes it leaves out).
func (c *Classifier) UnknownScores(ctx context.Context, inputs []Input) ([][]float64, error) {
	if c.openSet.scorer == nil {
		return nil, fmt.Errorf("model %s: %w", c.dir, ErrNotCalibrated)
	}
	if len(inputs) == 0 {
		return nil, nil
	}
	batch, shape, err := c.stack(inputs)
	if err != nil {
		return nil, err
	}
	k, s := len(c.classes), c.manifest.FeatureDim
	sc, err := c.score(ctx, batch, shape, true)
	if err != nil {
		return nil, err
	}
	all := gauss.UnknownScores()
	out := make([][]float64, len(inputs))
	for i := range out {
		out[i] = make([]float64, len(all))
		for j, u := range all {
			out[i][j] = c.openSet.scorer.Score(u, sc.scores[i*k:(i+1)*k], sc.features[i*s:(i+1)*s])
		}
	}
	return out, nil
}
