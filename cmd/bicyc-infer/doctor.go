package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/infer"
)

// doctorOptions are the doctor command's flags and arguments.
type doctorOptions struct {
	model      *modelOptions
	providers  []string
	require    []string
	runs       int
	batch      int
	minTime    time.Duration
	maxImages  int
	maxRelDiff float64
	paths      []string
}

func newDoctorCmd(model *modelOptions, stdout, stderr io.Writer) *cobra.Command {
	o := &doctorOptions{model: model}
	cmd := &cobra.Command{
		Use:   "doctor --model <dir> [flags] [<image path>...]",
		Short: "Check the GPU providers: same distances as the CPU, latency and throughput, as JSON",
		Long: `doctor is the self-check of a GPU installation. It opens the model on the CPU and on each
of --providers (CUDA and TensorRT by default), classifies the same images with each, and prints
one JSON object: the ONNX Runtime library and version, the GPU provider libraries beside it and
any CUDA or TensorRT libraries they need that the loader would not find, and per provider why it
could not run, or the largest absolute and relative difference of its class distances from the
CPU's (relative: |d - d_cpu| / max(|d_cpu|, 1)), how many images keep the CPU's closest class,
the median and 99th-percentile latency of a single-image call and the images per second at
--batch. The images are the files and directories given (the first --images of them), or 64
deterministic synthetic images of the model's input size.

The exit status is non-zero when a provider that ran differs from the CPU by more than
--max-rel-diff, or when a provider named by --require could not run. It needs no Go toolchain
and no network: point --ort-lib (or BICYC_ORT_LIB) at the library that 'make setup-gpu'
installed and LD_LIBRARY_PATH at the CUDA libraries (docs/gpu.md).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.paths = args
			return runDoctor(cmd.Context(), o, stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.providers, "providers", []string{string(infer.ProviderCUDA), string(infer.ProviderTensorRT)}, "providers to check against the cpu")
	f.StringSliceVar(&o.require, "require", nil, "providers that must run: fail if one cannot")
	f.IntVar(&o.runs, "runs", 200, "single-image calls the latency is measured over")
	f.IntVar(&o.batch, "batch", 256, "batch size of the throughput measurement")
	f.DurationVar(&o.minTime, "min-time", 2*time.Second, "least time the throughput is measured for, per provider")
	f.IntVar(&o.maxImages, "images", 64, "use at most this many of the given images")
	f.Float64Var(&o.maxRelDiff, "max-rel-diff", 1e-4, "largest relative difference of a distance from the cpu's that passes")
	return cmd
}

func runDoctor(ctx context.Context, o *doctorOptions, stdout, stderr io.Writer) error {
	if o.model.model == "" {
		return errors.New("no model: pass --model DIR or set BICYC_MODEL")
	}
	var s infer.CheckSettings
	for _, name := range o.providers {
		p, err := infer.ParseProvider(name)
		if err != nil {
			return fmt.Errorf("--providers: %w", err)
		}
		s.Providers = append(s.Providers, p)
	}
	if s.Providers == nil {
		s.Providers = []infer.Provider{}
	}
	required := map[infer.Provider]bool{}
	for _, name := range o.require {
		p, err := infer.ParseProvider(name)
		if err != nil {
			return fmt.Errorf("--require: %w", err)
		}
		required[p] = true
	}
	s.LatencyRuns, s.Batch, s.MinDuration = o.runs, o.batch, o.minTime
	imgs, err := loadImages(o.paths, o.maxImages, o.model.maxPixels, stderr)
	if err != nil {
		return err
	}
	opts, err := o.model.openOptions(stderr)
	if err != nil {
		return err
	}
	report, err := infer.CheckProviders(ctx, o.model.model, imgs, s, opts...)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(report); err != nil {
		return err
	}
	var errs []error
	for _, r := range report.Providers {
		switch {
		case r.Error != "" && required[r.Provider]:
			errs = append(errs, fmt.Errorf("%s could not run: %s", r.Provider, r.Error))
		case r.MaxRelDiff != nil && *r.MaxRelDiff > o.maxRelDiff:
			errs = append(errs, fmt.Errorf("%s: distances differ from the cpu's by up to %.3g relative, more than --max-rel-diff %g", r.Provider, *r.MaxRelDiff, o.maxRelDiff))
		}
		delete(required, r.Provider)
	}
	for p := range required {
		errs = append(errs, fmt.Errorf("%s is required but not among --providers", p))
	}
	return errors.Join(errs...)
}

// loadImages decodes the image files that paths name (directories
// searched as by the root command), at most max of them.
func loadImages(paths []string, max int, maxPixels int64, stderr io.Writer) ([]image.Image, error) {
	var imgs []image.Image
	for _, s := range expandPaths(paths, stderr) {
		if len(imgs) == max {
			break
		}
		if s.err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, s.err)
		}
		if s.name == "-" {
			return nil, errors.New("doctor reads image files, not standard input")
		}
		img, err := decodeFile(s.name, maxPixels)
		if err != nil {
			return nil, err
		}
		imgs = append(imgs, img)
	}
	return imgs, nil
}

func decodeFile(path string, maxPixels int64) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, _, err := imaging.DecodeImage(f, maxPixels)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return img, nil
}
