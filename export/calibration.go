package export

import (
	"fmt"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
)

// HeldOut are the backbone features of held-out images of the exported
// classes, images the model never trained on, from which Write fits the
// manifest's calibration (bundle.FitCalibration): the classifier's
// scores of them as the exported model computes them.
type HeldOut struct {
	// Features are [N, S]: the backbone features of N images, or, with the
	// classifier's test-time flip (gauss.ClassifierOptions.TestFlip),
	// [2N, S]: the N images', then their mirrors' in the same order,
	// whose scores and features a reader averages.
	Features []float32
	// ClassIDs are the N images' class IDs (bundle.Class.ID).
	ClassIDs []int
	// AcceptRate is the share of known-class images the model accepts by
	// default (gauss.DefaultAcceptRate normally; gauss.ValidateAcceptRate).
	AcceptRate float64
}

// calibrate fits the calibration of the model with classifier clf (built
// with opts), classes and stored prototypes p on h, and returns it with the
// unknown score it answers by.
func calibrate(h HeldOut, clf *gauss.Classifier, classes []bundle.Class, p bundle.Prototypes, opts gauss.ClassifierOptions) (*bundle.Calibration, gauss.UnknownScore, error) {
	column := make(map[int]int, len(classes))
	for c, cl := range classes {
		column[cl.ID] = c
	}
	n, k, s := len(h.ClassIDs), clf.Classes(), clf.Dim()
	columns := make([]int, n)
	for i, id := range h.ClassIDs {
		c, ok := column[id]
		if !ok {
			return nil, "", fmt.Errorf("calibration: held-out image %d has class %d, which the model does not have", i, id)
		}
		columns[i] = c
	}
	rows := n
	if opts.TestFlip {
		rows = 2 * n
	}
	if len(h.Features) != rows*s {
		return nil, "", fmt.Errorf("calibration: %d feature values for %d held-out images of dimension %d (test_flip %t: %d rows)",
			len(h.Features), n, s, opts.TestFlip, rows)
	}
	z := h.Features
	var scores []float32
	if opts.TestFlip {
		all := clf.Scores(z, 2*n)
		scores = gauss.MeanScores(all[:n*k], all[n*k:])
		z = gauss.MeanScores(z[:n*s], z[n*s:]) // the feature a reader averages too
	} else {
		scores = clf.Scores(z, n)
	}
	return bundle.FitCalibration(classes, p, opts, bundle.HeldOut{Scores: scores, Features: z, Columns: columns}, h.AcceptRate)
}
