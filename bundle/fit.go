package bundle

import (
	"fmt"

	"github.com/bicyc/bicyc/gauss"
)

// HeldOut are a model's scores and features of held-out images of its own
// classes, images it never trained on, as a reader computes them: with the
// test-time flip, the mean over each image and its mirror.
type HeldOut struct {
	// Scores are the classifier's scores [N, K], class c in column c.
	Scores []float32
	// Features are the backbone features [N, S]; nil fits only the
	// unknown scores that need none (gauss.UnknownScore.NeedsFeature).
	Features []float32
	// Columns are the N images' classes, as score columns.
	Columns []int
}

// FitCalibration fits the calibration of a model with classes, prototypes p
// and classifier options opts on held-out images h, the one fit that export
// and package author both use: gauss.FitCalibration for the temperature,
// class scales and gauss.ScoreMahalanobis's quantiles, then the held-out
// quantiles of every other gauss.UnknownScore (gauss.OpenSet.References,
// over NewOpenSet's background), and the threshold that accepts acceptRate
// of them (gauss.ValidateAcceptRate) for the score the model answers by.
// That score, which it returns to go into the manifest's classifier
// options, is opts.UnknownScore, or gauss.DefaultUnknownScore when that is
// empty. An unknown score added to gauss.UnknownScores is fitted with the
// others. Errors name what does not fit: lengths, too few images
// (gauss.MinCalibrationImages), a score without its quantiles.
func FitCalibration(classes []Class, p Prototypes, opts gauss.ClassifierOptions, h HeldOut, acceptRate float64) (*Calibration, gauss.UnknownScore, error) {
	if err := gauss.ValidateAcceptRate(acceptRate); err != nil {
		return nil, "", fmt.Errorf("calibration: %w", err)
	}
	k, n := len(classes), len(h.Columns)
	if p.K != k || len(h.Scores) != n*k || (h.Features != nil && len(h.Features) != n*p.S) {
		return nil, "", fmt.Errorf("calibration: %d scores and %d feature values for %d held-out images of %d classes of dimension %d (prototypes: %d classes)",
			len(h.Scores), len(h.Features), n, k, p.S, p.K)
	}
	fit, err := gauss.FitCalibration(h.Scores, n, k, h.Columns, p.Bias)
	if err != nil {
		return nil, "", fmt.Errorf("calibration: %w", err)
	}
	o, err := NewOpenSet(classes, p, fit, opts)
	if err != nil {
		return nil, "", fmt.Errorf("calibration: %w", err)
	}
	fit.References = o.References(h.Scores, h.Features, n)
	delete(fit.References, gauss.ScoreMahalanobis) // fit.Reference
	score := opts.UnknownScore
	if score == "" {
		score = gauss.DefaultUnknownScore
	}
	cal, err := NewCalibration(fit, n, acceptRate, score)
	if err != nil {
		return nil, "", fmt.Errorf("calibration: %w", err)
	}
	return cal, score, nil
}

// NewOpenSet builds the gauss.OpenSet that computes every unknown score of
// a model with classes, prototypes p, calibration cal and classifier
// options opts. Its background is the Gaussians of the classes the model
// was trained on: classes added later from a few images (Class.AddedImages)
// are left out, so adding classes moves neither the feature scores of
// known images nor the calibration's thresholds.
func NewOpenSet(classes []Class, p Prototypes, cal gauss.Calibration, opts gauss.ClassifierOptions) (*gauss.OpenSet, error) {
	protos := p.Gaussians()
	if len(classes) != len(protos) {
		return nil, fmt.Errorf("open set: %d classes, %d prototypes", len(classes), len(protos))
	}
	var trained []gauss.Gaussian
	for i, c := range classes {
		if c.AddedImages == 0 {
			trained = append(trained, protos[i])
		}
	}
	return gauss.NewOpenSet(protos, trained, p.Bias, cal, opts)
}
