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
// threshold for acceptRate (gauss.DefaultAcceptRate normally). A held-out
// image of a class the model does not have is an error, as is anything
// gauss.FitCalibration refuses (fewer than gauss.MinCalibrationImages
// images: a run without a held-out split exports no calibration).
func FitCalibration(clf *gauss.Classifier, classes []bundle.Class, scores []float32, ids []int, acceptRate float64) (*bundle.Calibration, error) {
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
	return bundle.NewCalibration(cal, n, acceptRate), nil
}
