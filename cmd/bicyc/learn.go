package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/bicyc/bicyc/train"
)

type learnOptions struct {
	run, trainDir, testDir string
	export                 bool
}

func newLearnCmd() *cobra.Command {
	opts := &learnOptions{}
	cmd := &cobra.Command{
		Use:   "learn --run <run-dir> --train <dir> --test <dir>",
		Short: "Teach a finished run one new task of new classes, from new data alone",
		Long: `learn adds one task to a finished run: the classes are the sub-folders of --train (one
folder per class, PNG/JPEG/...; --test has the same folders), converted with the run's
preprocessing and given class ids after the run's last one. Training uses only these new
images: the old classes live on as Gaussian prototypes, carried into the new feature space
by the adapter. The run's checkpoints and metrics are updated, and its model directory
too when the run's configuration enables export (export.enabled, written to export.dir or
<run>/model, as bicyc train does); an interrupted learn resumes with 'bicyc train --resume'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			run, err := train.Resume(opts.run, train.Options{Log: cmd.ErrOrStderr(), Progress: progressWriter(cmd)})
			if err != nil {
				return err
			}
			defer run.Close()
			if err := run.Learn(ctx, opts.trainDir, opts.testDir); err != nil {
				return err
			}
			if !opts.export {
				return nil
			}
			return exportAfterTraining(cmd, run)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.run, "run", "", "finished run `dir`ectory (required)")
	f.StringVar(&opts.trainDir, "train", "", "training images of the new classes, one sub-`dir`ectory per class (required)")
	f.StringVar(&opts.testDir, "test", "", "test images of the new classes, same sub-directories (required)")
	f.BoolVar(&opts.export, "export", true, "export the updated model directory when the run's export.enabled is on (false: never)")
	cmd.MarkFlagRequired("run")
	cmd.MarkFlagRequired("train")
	cmd.MarkFlagRequired("test")
	return cmd
}
