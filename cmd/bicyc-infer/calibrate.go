package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/bicyc/bicyc/author"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
)

// calibrateOptions are the calibrate command's flags.
type calibrateOptions struct {
	model      *modelOptions
	from       string
	out        string
	acceptRate float64
	skip       bool
	wait       time.Duration
}

func newCalibrateCmd(model *modelOptions, stdout io.Writer) *cobra.Command {
	o := &calibrateOptions{model: model}
	cmd := &cobra.Command{
		Use:   "calibrate --model <dir> --from <folder> --out <new-dir> [--rate <r>]",
		Short: "Calibrate confidence and unknown answers on held-out images",
		Long: fmt.Sprintf(`calibrate writes a copy of the model with a calibration fitted on <folder>: one sub-folder
per class of the model, named after it (or by its class ID), holding images the model was
never trained on, at least %d in all. Models exported from a run with a validation split
are calibrated already; use this for older models or to calibrate on data from production.

The calibration fits a temperature T for the class probabilities softmax(-d/2T) and, per
class, the typical held-out distance s_c. An image's unknown score is min_c d_c/s_c, and the
image is unknown when the score is above the --rate quantile of the held-out images' scores.`,
			gauss.MinCalibrationImages),
		Annotations: map[string]string{modelFlagsUsed: embedFlags + ",exact-scores"}, // it scores the held-out images
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCalibrate(cmd.Context(), o, stdout, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&o.from, "from", "", "`folder` of held-out images, one sub-folder per class (required)")
	cmd.Flags().StringVar(&o.out, "out", "", "new model `dir`ectory to write (required)")
	cmd.Flags().Float64Var(&o.acceptRate, "rate", gauss.DefaultAcceptRate, "default share of known-class images to accept")
	addSkipUnreadableFlag(cmd, &o.skip)
	addWaitFlag(cmd, &o.wait)
	return cmd
}

func runCalibrate(ctx context.Context, o *calibrateOptions, stdout, stderr io.Writer) error {
	heldOut, opts, err := o.model.folderJob("calibrate", o.from, o.out, o.skip, stderr)
	if err != nil {
		return err
	}
	var cal *bundle.Calibration
	err = asRepositoryWriter(ctx, "calibrate", o.out, o.wait, stderr, func() error {
		cal, err = author.Calibrate(ctx, o.model.model, o.out, heldOut, o.acceptRate, opts...)
		return err
	})
	if err != nil {
		return flagError(err)
	}
	fmt.Fprintf(stdout, "wrote %s: calibrated on %d images, temperature %.3g, threshold %.3g accepts %.0f%% of them\n",
		o.out, cal.HeldOutImages, cal.Temperature, cal.Threshold, 100*cal.AcceptRate)
	return nil
}
