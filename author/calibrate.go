package author

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/infer"
)

// Calibrate writes outDir: the model in modelDir with a calibration
// (bundle.Calibration) fitted on held-out images of its own classes, for a
// model exported without one or to refit on new data. heldOut names each
// class as the manifest does (case-insensitively), or by its class ID for
// names that cannot be folder names ("T-shirt/top"), and must hold images the
// model never trained on, at least gauss.MinCalibrationImages in all;
// acceptRate (gauss.DefaultAcceptRate normally) sets the default
// threshold. Every other file is copied as it is; outDir must not exist or
// be empty (else ErrOutputExists), and modelDir is never modified
// (ErrModelChanged if it changes meanwhile). A class name the model does
// not have wraps ErrClassFolder. When ctx is done, Calibrate stops and
// writes nothing; the error wraps ctx.Err().
func Calibrate(ctx context.Context, modelDir, outDir string, heldOut []LabelledImages, acceptRate float64, opts ...infer.Option) (*bundle.Calibration, error) {
	if err := gauss.ValidateAcceptRate(acceptRate); err != nil {
		return nil, err
	}
	manifestSum, err := bundle.ManifestSum(modelDir)
	if err != nil {
		return nil, err
	}
	b, err := bundle.Open(modelDir)
	if err != nil {
		return nil, err
	}
	if err := checkOutDir(modelDir, outDir); err != nil {
		return nil, err
	}
	labels, err := heldOutLabels(b.Manifest.Classes, heldOut)
	if err != nil {
		return nil, err
	}
	scores, err := scoreClasses(ctx, modelDir, heldOut, opts)
	if err != nil {
		return nil, err
	}
	fit, err := gauss.FitCalibration(scores, len(labels), len(b.Manifest.Classes), labels, b.Prototypes.Bias)
	if err != nil {
		return nil, fmt.Errorf("calibrate %s: %w", modelDir, err)
	}
	m := b.Manifest
	m.Calibration = bundle.NewCalibration(fit, len(labels), acceptRate)
	files := make(map[string][]byte, len(m.Files))
	for _, name := range slices.Sorted(maps.Keys(m.Files)) {
		if files[name], err = b.ReadFile(name); err != nil {
			return nil, err
		}
	}
	if now, err := bundle.ManifestSum(modelDir); err != nil || now != manifestSum {
		return nil, fmt.Errorf("%s: %w; calibrate the new version", modelDir, ErrModelChanged)
	}
	if err := bundle.Write(outDir, &m, files); err != nil {
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
	for c, cl := range classes {
		column[strings.ToLower(cl.Name)] = c
	}
	var labels []int
	for _, h := range heldOut {
		c, ok := column[strings.ToLower(h.Name)]
		if !ok {
			return nil, fmt.Errorf("%w: %q is not a class of the model", ErrClassFolder, h.Name)
		}
		for range h.Files {
			labels = append(labels, c)
		}
	}
	return labels, nil
}

// scoreClasses returns model.onnx's scores [n, K] of every image, class by
// class, in order.
func scoreClasses(ctx context.Context, modelDir string, classes []LabelledImages, opts []infer.Option) ([]float32, error) {
	c, err := infer.Open(ctx, modelDir, opts...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out []float32
	for _, class := range classes {
		err := eachBatch(c, class, func(inputs []infer.Input) error {
			rows, err := c.Scores(ctx, inputs)
			for _, r := range rows {
				out = append(out, r...)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
