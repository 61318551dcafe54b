package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/bicyc/bicyc/rundir"
	"github.com/bicyc/bicyc/train"
)

type exportOptions struct {
	run, out string
	wait     time.Duration
}

func newExportCmd() *cobra.Command {
	opts := &exportOptions{}
	cmd := &cobra.Command{
		Use:   "export --run <run-dir> [--out <model-dir>]",
		Short: "Write a run's ONNX models and prototype bundle to a model directory",
		Long: `export writes, from the last completed task of a run: backbone.onnx, adapter.onnx,
classifier.onnx, model.onnx (backbone and classifier fused), prototypes.safetensors,
manifest.json with a SHA-256 for every file, and manifest.sha256 with the SHA-256 of the
manifest itself (bicyc-infer refuses a changed manifest like a changed model file). The directory is replaced atomically: an
interrupted export leaves the previous model directory as it was. It is also the repair of a
model directory left older than its run by a train or learn killed before their export.

export only writes: it reads the checkpoint, never the dataset, and runs no network; the
calibration is fitted on the validation features the checkpoint holds. A checkpoint written
before checkpoints held them is refused, naming the file: train --resume exports such a run.

An export in place (into the run, or to its own model directory: <run>/model or export.dir)
holds the run's lock: while another process trains or learns on the run it fails naming that
process, or waits with --wait. An export elsewhere (--out) only reads the run and writes
nothing into it: a read-only run exports.`,
		Annotations: map[string]string{configHint: "the run is exported with the configuration it was trained with"},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := opts.out
			if out == "" {
				var err error
				if out, err = train.DefaultModelDir(opts.run); err != nil {
					return err
				}
			}
			behind, _ := rundir.Check(opts.run, out)
			if err := train.Export(opts.run, out, opts.wait); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "model exported to %s\n", out)
			if behind != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "it held %d tasks, its run %d: now up to date\n", behind.ModelTasks, behind.RunTasks)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.run, "run", "", "run `dir`ectory to export (required)")
	cmd.Flags().StringVar(&opts.out, "out", "", "model `dir`ectory to write (default: the run's export.dir, else <run>/model)")
	addWaitFlag(cmd, &opts.wait)
	cmd.MarkFlagRequired("run")
	return cmd
}
