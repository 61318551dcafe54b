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
	// AcceptRate is the default share of known-class images accepted, and
	// Threshold the unknown-score threshold that gives it.
	AcceptRate float64 `json:"accept_rate"`
	Threshold  float64 `json:"threshold"`
}

// NewCalibration records c, fitted on heldOut images, with the default
// acceptance rate acceptRate (gauss.ValidateAcceptRate; it panics on
// another, as gauss.Calibration.Threshold does).
func NewCalibration(c gauss.Calibration, heldOut int, acceptRate float64) *Calibration {
	return &Calibration{Temperature: c.Temperature, ClassScales: c.Scales, HeldOutScores: c.Reference,
		HeldOutImages: heldOut, AcceptRate: acceptRate, Threshold: c.Threshold(acceptRate)}
}

// Gauss returns the calibration in the form that computes with it.
func (c *Calibration) Gauss() gauss.Calibration {
	return gauss.Calibration{Temperature: c.Temperature, Scales: c.ClassScales, Reference: c.HeldOutScores}
}

// validate checks c against a manifest of k classes; errors wrap
// ErrManifest.
func (c *Calibration) validate(k int) error {
	if err := c.Gauss().Validate(k); err != nil {
		return fmt.Errorf("%w: calibration: %w", ErrManifest, err)
	}
	if c.HeldOutImages < gauss.MinCalibrationImages {
		return fmt.Errorf("%w: calibration: %d held-out images, want at least %d", ErrManifest, c.HeldOutImages, gauss.MinCalibrationImages)
	}
	if err := gauss.ValidateAcceptRate(c.AcceptRate); err != nil {
		return fmt.Errorf("%w: calibration: %w", ErrManifest, err)
	}
	if !(c.Threshold >= 0) || math.IsInf(c.Threshold, 0) {
		return fmt.Errorf("%w: calibration: threshold %v, want a finite value >= 0", ErrManifest, c.Threshold)
	}
	return nil
}
