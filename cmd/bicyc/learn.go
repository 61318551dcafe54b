package main

import (
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/train"
)

type learnOptions struct {
	run, trainDir, testDir  string
	export, allowDuplicates bool
	wait                    time.Duration
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
by the adapter. The run's checkpoints and metrics are updated, and its model directory
too when the run's configuration enables export (export.enabled, written to export.dir or
<run>/model, as bicyc train does); an interrupted learn resumes with 'bicyc train --resume'.

The new task is trained with the run's configuration (RUN/config.yaml, or --config),
changed by BICYC_* variables, flags and --set like train: the keys of the new task's own
training (train.epochs, train.lr, train.min_steps, train.batch_size, loss weights,
adapter.*, method, threads; train.LearnKeys) may change; keys that shaped the tasks
already learned (data, model, stream, seed, classifier) are refused, naming them. Every class
needs at least 2 training images (a warning below 10), and a class named like one the run
already has is refused unless --allow-duplicate-names. The folders are read by the rule of
docs/datasets.md (links followed, hidden entries reported, class names checked) and judged
whole: every unreadable image is named in one error, or left out with --skip-unreadable. A run
whose model directory is older than its last checkpoint (a train or learn killed before its
export) is refused with the repair: bicyc export --run <run-dir>.

Unlike train, learn keeps BatchNorm's running statistics frozen by default
(train.freeze_bn_stats true; --set train.freeze_bn_stats=false trains them): a new task from
another source moves them far. Measured on Fashion-MNIST (docs/training.md, Small tasks): learning two
inverted classes from 1000 images each cost the old classes 10.3 points with the statistics
trained and 0.3 with them frozen.`,
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
			// A learned task's images come from elsewhere than the run's
			// stream: keep BatchNorm's statistics unless told otherwise.
			base.Train.FreezeBNStats = true
			cfg, err := loadConfigOver(base, g, cmd.Flags())
			if err != nil {
				return err
			}
			run, err := train.Resume(opts.run, train.Options{Log: cmd.ErrOrStderr(), Progress: progressWriter(cmd), Wait: opts.wait})
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
			return exportAfterTraining(cmd, run)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.run, "run", "", "finished run `dir`ectory (required)")
	f.StringVar(&opts.trainDir, "train", "", "training images of the new classes, one sub-`dir`ectory per class (required)")
	f.StringVar(&opts.testDir, "test", "", "test images of the new classes, same sub-directories (required)")
	f.BoolVar(&opts.export, "export", true, "export the updated model directory when the run's export.enabled is on (false: never)")
	f.BoolVar(&opts.allowDuplicates, "allow-duplicate-names", false, "accept a new class named like an existing one")
	f.String("method", "", "bicyc, adagauss or finetune for the new task (config key method)")
	f.Int("threads", 0, "CPU threads, 0 = all (config key threads)")
	addSkipUnreadableFlag(cmd)
	addWaitFlag(cmd, &opts.wait)
	cmd.MarkFlagRequired("run")
	cmd.MarkFlagRequired("train")
	cmd.MarkFlagRequired("test")
	return cmd
}
