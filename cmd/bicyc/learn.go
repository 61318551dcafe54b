package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/train"
)

type learnOptions struct {
	run, trainDir, testDir string
	export, allowDuplicates bool
}

func newLearnCmd(g *globalOptions) *cobra.Command {
	opts := &learnOptions{}
	cmd := &cobra.Command{
		Use:   "learn --run <run-dir> --train <dir> --test <dir>",
		Short: "Teach a finished run one new task of new classes, from new data alone",
		Long: `learn adds one task to a finished run: the classes are the sub-folders of --train (one
folder per class, PNG/JPEG/...; --test has the same folders), converted with the run's
preprocessing and given class ids after the run's last one. Training uses only these new
images: the old classes live on as Gaussian prototypes, carried into the new feature space
by the adapter. The run's checkpoints, metrics and (by default) its model directory are
updated; an interrupted learn resumes with 'bicyc train --resume'.

The new task is trained with the run's configuration (RUN/config.yaml, or --config),
changed by BICYC_* variables, flags and --set like train: the keys of the new task's own
training (train.epochs, train.lr, train.min_steps, train.batch_size, loss weights,
adapter.*, method, threads; train.LearnKeys) may change; keys that shaped the tasks
already learned (data, model, stream, seed, classifier) are refused, naming them. Every class
needs at least 2 training images (a warning below 10), and a class named like one the run
already has is refused unless --allow-duplicate-names.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			base := config.Default()
			if g.configFile == "" {
				var err error
				if base, err = config.ReadRun(filepath.Join(opts.run, "config.yaml")); err != nil {
					return err
				}
			}
			cfg, err := loadConfigOver(base, g, cmd.Flags())
			if err != nil {
				return err
			}
			run, err := train.Resume(opts.run, train.Options{Log: cmd.ErrOrStderr(), Progress: progressWriter(cmd)})
			if err != nil {
				return err
			}
			defer run.Close()
			lopts := train.LearnOptions{Config: &cfg, AllowDuplicateNames: opts.allowDuplicates}
			if err := run.Learn(ctx, opts.trainDir, opts.testDir, lopts); err != nil {
				return err
			}
			if !opts.export {
				return nil
			}
			dir := run.Config().Export.Dir
			if dir == "" {
				dir = filepath.Join(run.Dir(), "model")
			}
			if err := train.Export(run.Dir(), dir); err != nil {
				return fmt.Errorf("export: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "model exported to %s\n", dir)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.run, "run", "", "finished run `dir`ectory (required)")
	f.StringVar(&opts.trainDir, "train", "", "training images of the new classes, one sub-`dir`ectory per class (required)")
	f.StringVar(&opts.testDir, "test", "", "test images of the new classes, same sub-directories (required)")
	f.BoolVar(&opts.export, "export", true, "export the updated model directory")
	f.BoolVar(&opts.allowDuplicates, "allow-duplicate-names", false, "accept a new class named like an existing one")
	f.String("method", "", "bicyc, adagauss or finetune for the new task (config key method)")
	f.Int("threads", 0, "CPU threads, 0 = all (config key threads)")
	cmd.MarkFlagRequired("run")
	cmd.MarkFlagRequired("train")
	cmd.MarkFlagRequired("test")
	return cmd
}
