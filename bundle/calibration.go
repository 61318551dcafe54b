package bundle

import (
	"fmt"
	"math"

	"github.com/bicyc/bicyc/gauss"
)

// Calibration is what turns the classifier's scores into a confidence and
// an "unknown" answer (gauss.Calibration has the formulas), fitted at
// export on held-out images of the known classes that training never saw.
// A manifest without it (older models, or runs without a held-out split)
// opens as before: its answers have no confidence and are never unknown
// unless the caller sets a threshold on the nearest distance.
type Calibration struct {
	// Temperature T of the posterior softmax(-d / 2T).
	Temperature float64 `json:"temperature"`
	// ClassScales are s_c, one per entry of Manifest.Classes, in order.
	ClassScales []float64 `json:"class_scales"`
	// HeldOutScores are the sorted quantiles (0 % to 100 %) of the unknown
	// score over the held-out images, from which any acceptance rate's
	// threshold follows.
	HeldOutScores []float64 `json:"heldout_scores"`
	// HeldOutImages is how many held-out images the fit used.
	HeldOutImages int `json:"heldout_images"`
	// ScoreQuantiles holds the same quantile table for every other
	// unknown score (gauss.UnknownScores), by name; absent from manifests
	// written before scores could be chosen, whose only score is
	// gauss.ScoreMahalanobis.
	ScoreQuantiles map[string][]float64 `json:"heldout_score_quantiles,omitempty"`
	// AcceptRate is the default share of known-class images accepted, and
	// Threshold the threshold that gives it to the manifest's unknown score
	// (Manifest.UnknownScore).
	AcceptRate float64 `json:"accept_rate"`
	Threshold  float64 `json:"threshold"`
}

// NewCalibration records c, fitted on heldOut images, with the default
// acceptance rate acceptRate (gauss.ValidateAcceptRate; it panics on
// another, as gauss.Calibration.Threshold does) and its threshold for
// score, which c must hold the held-out quantiles of (gauss.ErrNoReference
// otherwise).
func NewCalibration(c gauss.Calibration, heldOut int, acceptRate float64, score gauss.UnknownScore) (*Calibration, error) {
	out := &Calibration{Temperature: c.Temperature, ClassScales: c.Scales, HeldOutScores: c.Reference,
		HeldOutImages: heldOut, AcceptRate: acceptRate}
	if len(c.References) > 0 {
		out.ScoreQuantiles = make(map[string][]float64, len(c.References))
		for u, ref := range c.References {
			out.ScoreQuantiles[string(u)] = ref
		}
	}
	var err error
	if out.Threshold, err = c.ThresholdOf(score, acceptRate); err != nil {
		return nil, err
	}
	return out, nil
}

// Gauss returns the calibration in the form that computes with it.
func (c *Calibration) Gauss() gauss.Calibration {
	g := gauss.Calibration{Temperature: c.Temperature, Scales: c.ClassScales, Reference: c.HeldOutScores}
	if len(c.ScoreQuantiles) > 0 {
		g.References = make(map[gauss.UnknownScore][]float64, len(c.ScoreQuantiles))
		for name, ref := range c.ScoreQuantiles {
			g.References[gauss.UnknownScore(name)] = ref
		}
	}
	return g
}

// validate checks c against a manifest of k classes answering by score;
// errors wrap ErrManifest.
func (c *Calibration) validate(k int, score gauss.UnknownScore) error {
	if err := c.Gauss().Validate(k); err != nil {
		return fmt.Errorf("%w: calibration: %w", ErrManifest, err)
	}
	if c.HeldOutImages < gauss.MinCalibrationImages {
		return fmt.Errorf("%w: calibration: %d held-out images, want at least %d", ErrManifest, c.HeldOutImages, gauss.MinCalibrationImages)
	}
	if err := gauss.ValidateAcceptRate(c.AcceptRate); err != nil {
		return fmt.Errorf("%w: calibration: %w", ErrManifest, err)
	}
	if !c.Gauss().Has(score) {
		return fmt.Errorf("%w: calibration: classifier.unknown_score %s has no held-out quantiles", ErrManifest, score)
	}
	// Only the distance scores are never negative.
	if math.IsNaN(c.Threshold) || math.IsInf(c.Threshold, 0) || (score == gauss.ScoreMahalanobis && c.Threshold < 0) {
		return fmt.Errorf("%w: calibration: threshold %v, want a finite value (>= 0 for the mahalanobis score)", ErrManifest, c.Threshold)
	}
	return nil
}
