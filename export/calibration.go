package export

import (
	"fmt"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
)

// FitCalibration fits the calibration stored in the manifest
// (Input.Calibration) from held-out images the model never trained on:
// scores [n, K] are clf's scores of them, as the exported model computes
// them (Classifier.Scores of their features, or with the test-time flip
// the mean over each image and its mirror), ids their class IDs, and clf
// the classifier being exported, whose column c is classes[c]. It fits
// gauss.FitCalibration and records the
// threshold for acceptRate (gauss.DefaultAcceptRate normally). protos are
// the classes' Gaussians (classes[c]'s is protos[c]) and features [n, S]
// the held-out images' backbone features (with the flip, the mean of each
// image's and its mirror's): with them the calibration also holds every
// gauss.UnknownScore's held-out quantiles (gauss.OpenSet.References), so a
// reader can answer by any score (opts are the options clf was built with;
// the threshold is that of opts.UnknownScore, ScoreMahalanobis when empty);
// nil protos fit ScoreMahalanobis alone,
// and nil features the scores that need no feature. A held-out
// image of a class the model does not have is an error, as is anything
// gauss.FitCalibration refuses (fewer than gauss.MinCalibrationImages
// images: a run without a held-out split exports no calibration).
func FitCalibration(clf *gauss.Classifier, opts gauss.ClassifierOptions, classes []bundle.Class, protos []gauss.Gaussian, scores, features []float32, ids []int, acceptRate float64) (*bundle.Calibration, error) {
	column := make(map[int]int, len(classes))
	for c, cl := range classes {
		column[cl.ID] = c
	}
	labels := make([]int, len(ids))
	for i, id := range ids {
		c, ok := column[id]
		if !ok {
			return nil, fmt.Errorf("export: calibration: held-out image %d has class %d, which the model does not have", i, id)
		}
		labels[i] = c
	}
	n := len(ids)
	if len(scores) != n*clf.Classes() || len(classes) != clf.Classes() {
		return nil, fmt.Errorf("export: calibration: %d scores for %d images of %d classes, %d classes for a classifier of %d",
			len(scores), n, clf.Classes(), len(classes), clf.Classes())
	}
	if err := gauss.ValidateAcceptRate(acceptRate); err != nil {
		return nil, fmt.Errorf("export: calibration: %w", err)
	}
	cal, err := gauss.FitCalibration(scores, n, clf.Classes(), labels, clf.Tables().Bias)
	if err != nil {
		return nil, fmt.Errorf("export: calibration: %w", err)
	}
	if protos != nil {
		if features != nil && len(features) != n*clf.Dim() {
			return nil, fmt.Errorf("export: calibration: %d feature values for %d images of dimension %d", len(features), n, clf.Dim())
		}
		o, err := gauss.NewOpenSet(protos, protos, clf.Tables().Bias, cal, opts)
		if err != nil {
			return nil, fmt.Errorf("export: calibration: %w", err)
		}
		cal.References = o.References(scores, features, n)
		delete(cal.References, gauss.ScoreMahalanobis) // cal.Reference
	}
	score := opts.UnknownScore
	if score == "" {
		score = gauss.ScoreMahalanobis
	}
	out, err := bundle.NewCalibration(cal, n, acceptRate, score)
	if err != nil {
		return nil, fmt.Errorf("export: calibration: %w", err)
	}
	return out, nil
}
