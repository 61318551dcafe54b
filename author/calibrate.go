package author

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/names"
)

// Calibrate writes outDir: the model in modelDir with a calibration
// (bundle.Calibration) fitted on held-out images of its own classes, for a
// model exported without one or to refit on new data. heldOut names each
// class as the manifest does (case-insensitively), or by its class ID for
// names that cannot be folder names ("T-shirt/top"), and must hold images the
// model never trained on, at least gauss.MinCalibrationImages in all; of
// more than gauss.MaxCalibrationPairs/K, a sample (gauss.CalibrationSample)
// is used. acceptRate (gauss.DefaultAcceptRate normally) sets the default
// threshold. Every other file is copied as it is; outDir must not exist or
// be empty (else ErrOutputExists), and modelDir is never modified
// (ErrModelChanged if it changes meanwhile). A class name the model does
// not have wraps ErrClassFolder. When ctx is done, Calibrate stops and
// writes nothing; the error wraps ctx.Err().
func Calibrate(ctx context.Context, modelDir, outDir string, heldOut []LabelledImages, acceptRate float64, opts ...infer.Option) (*bundle.Calibration, error) {
	if err := gauss.ValidateAcceptRate(acceptRate); err != nil {
		return nil, err
	}
	b, manifestSum, err := openSource(modelDir, outDir)
	if err != nil {
		return nil, err
	}
	if _, err := heldOutLabels(b.Manifest.Classes, heldOut); err != nil {
		return nil, err
	}
	heldOut = sampleHeldOut(heldOut, len(b.Manifest.Classes))
	labels, err := heldOutLabels(b.Manifest.Classes, heldOut)
	if err != nil {
		return nil, err
	}
	scores, features, err := scoreClasses(ctx, modelDir, heldOut, opts)
	if err != nil {
		return nil, err
	}
	m := b.Manifest
	// Calibrated anew, the model holds every score's quantiles: one of a
	// manifest without a score answers by the default one.
	m.Calibration, m.Classifier.UnknownScore, err = bundle.FitCalibration(m.Classes, b.Prototypes, m.Classifier,
		bundle.HeldOut{Scores: scores, Features: features, Columns: labels}, acceptRate)
	if err != nil {
		return nil, fmt.Errorf("calibrate %s: %w", modelDir, err)
	}
	files := make(map[string][]byte, len(m.Files))
	for _, name := range slices.Sorted(maps.Keys(m.Files)) {
		if files[name], err = b.ReadFile(name); err != nil {
			return nil, err
		}
	}
	if err := checkUnchanged(modelDir, manifestSum, "calibrate"); err != nil {
		return nil, err
	}
	if err := create(outDir, &m, files); err != nil {
		return nil, err
	}
	return m.Calibration, nil
}

// heldOutLabels maps every held-out image to its class's score column.
func heldOutLabels(classes []bundle.Class, heldOut []LabelledImages) ([]int, error) {
	column := make(map[string]int, 2*len(classes))
	for c, cl := range classes {
		column[strconv.Itoa(cl.ID)] = c
	}
	// Exactly, up to Unicode form (folder names come in NFC): a model
	// may have "Shirt" and "shirt".
	for c, cl := range classes {
		column[names.NFC(cl.Name)] = c
	}
	var labels []int
	for _, h := range heldOut {
		c, ok := column[names.NFC(h.Name)]
		if !ok {
			return nil, fmt.Errorf("%w: %q is not a class of the model", ErrClassFolder, h.Name)
		}
		for range h.Files {
			labels = append(labels, c)
		}
	}
	return labels, nil
}

// sampleHeldOut keeps the held-out images a calibration over k classes
// takes (gauss.CalibrationSample, a fixed seed so the same folders give
// the same calibration), class by class in order; a class left without
// any is dropped.
func sampleHeldOut(heldOut []LabelledImages, k int) []LabelledImages {
	n := 0
	for _, h := range heldOut {
		n += len(h.Files)
	}
	keep := gauss.CalibrationSample(n, k, 0)
	if len(keep) == n {
		return heldOut
	}
	var out []LabelledImages
	i, at := 0, 0 // i: the image's index among all; at: into keep
	for _, h := range heldOut {
		kept := LabelledImages{Name: h.Name}
		for _, f := range h.Files {
			if at < len(keep) && keep[at] == i {
				kept.Files = append(kept.Files, f)
				at++
			}
			i++
		}
		if len(kept.Files) > 0 {
			out = append(out, kept)
		}
	}
	return out
}

// scoreClasses returns model.onnx's scores [n, K] and the backbone's
// features [n, S] of every image (with the test-time flip, the mean of the
// image's and its mirror's, as infer.Classifier scores them), class by
// class, in order.
func scoreClasses(ctx context.Context, modelDir string, classes []LabelledImages, opts []infer.Option) (scores, features []float32, err error) {
	c, err := infer.Open(ctx, modelDir, opts...)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	flip := c.Manifest().Classifier.TestFlip
	for _, class := range classes {
		err := eachBatch(c, class, func(inputs []infer.Input) error {
			rows, err := c.Scores(ctx, inputs)
			if err != nil {
				return err
			}
			z, err := c.EmbedInputs(ctx, inputs)
			if err != nil {
				return err
			}
			var mirrored [][]float32
			if flip {
				flipped := make([]infer.Input, len(inputs))
				for i, in := range inputs {
					if flipped[i], err = c.Mirror(in); err != nil {
						return err
					}
				}
				if mirrored, err = c.EmbedInputs(ctx, flipped); err != nil {
					return err
				}
			}
			for i, r := range rows {
				scores = append(scores, r...)
				if flip {
					z[i] = gauss.MeanScores(z[i], mirrored[i])
				}
				features = append(features, z[i]...)
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return scores, features, nil
}
