package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/bicyc/bicyc/train"
)

type trainOptions struct {
	resume     string
	fork       string
	cpuProfile string
	stopAfter  int
	wait       time.Duration
}

func newTrainCmd(g *globalOptions) *cobra.Command {
	opts := &trainOptions{}
	cmd := &cobra.Command{
		Use:   "train [--config <file>] [--resume <run-dir> | --fork <run-dir>]",
		Short: "Run a task stream: Stage I, Stage II, transport and evaluation after every task",
		Long: `train runs every task of the configured stream: Stage I joint training, Stage II adapter
fine-tune and Gaussian transport of old classes, evaluation over all seen classes, and an
atomic checkpoint after every task. The run directory (run_dir/run_name) receives the
resolved config, the task stream, metrics (JSON, CSV), accuracy matrices, a log, the
checkpoints and, at the end, the exported ONNX model directory.

--resume DIR continues a killed run after its last completed task, with the configuration
it was started with.

--fork DIR starts a new run from the first task of the run in DIR instead of training it
again: task 1 (CE, rotation, anti-collapse) is the same for every method and for every
setting of the later-task keys (method, loss weights and switches, adapter.*, train.epochs,
train.lr; see config.LaterTaskKeys). The configuration is DIR/config.yaml unless --config is
given, changed by flags and --set as usual; give the new run its own --name. Example:

  bicyc train --fork runs/fmnist-t5-e10-bicyc-s0 --name e10-a0 --set adapter.alpha=0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runTrain(ctx, g, opts, cmd)
		},
	}
	addRunFlags(cmd)
	cmd.Flags().StringVar(&opts.resume, "resume", "", "continue the run in `dir` after its last completed task")
	cmd.Flags().StringVar(&opts.fork, "fork", "", "start a new run from the first task of the run in `dir`")
	cmd.MarkFlagsMutuallyExclusive("resume", "fork")
	cmd.Flags().IntVar(&opts.stopAfter, "stop-after", 0, "stop once `n` tasks are complete (resume later with --resume)")
	cmd.Flags().StringVar(&opts.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to `file` (go tool pprof)")
	addWaitFlag(cmd, &opts.wait)
	return cmd
}

// addWaitFlag adds --wait to a command that writes a run: how long to wait
// for another process writing the same run (rundir.Lock).
func addWaitFlag(cmd *cobra.Command, wait *time.Duration) {
	cmd.Flags().DurationVar(wait, "wait", 0, "wait up to `duration` (e.g. 10m) while another process writes the run, instead of failing at once")
}

func runTrain(ctx context.Context, g *globalOptions, opts *trainOptions, cmd *cobra.Command) error {
	if opts.cpuProfile != "" {
		f, err := os.Create(opts.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	ropts := train.Options{Log: cmd.ErrOrStderr(), Progress: progressWriter(cmd), StopAfter: opts.stopAfter, Wait: opts.wait}
	var run *train.Run
	var err error
	if opts.resume != "" {
		if err := refuseOnResume(g, cmd); err != nil {
			return err
		}
		run, err = train.Resume(opts.resume, ropts)
	} else {
		if opts.fork != "" && g.configFile == "" {
			g.configFile = filepath.Join(opts.fork, "config.yaml")
		}
		cfg, lerr := loadConfig(g, cmd.Flags())
		if lerr != nil {
			return lerr
		}
		dir, derr := cfg.RunFolder(configName(g.configFile))
		if derr != nil {
			return derr
		}
		if opts.fork == "" {
			run, err = train.New(cfg, dir, ropts)
		} else if same, _ := sameDir(dir, opts.fork); same {
			return fmt.Errorf("--fork %s: the new run would be %s itself: give it another --name", opts.fork, dir)
		} else {
			run, err = train.Fork(opts.fork, cfg, dir, ropts)
		}
	}
	if err != nil {
		return err
	}
	defer run.Close()
	if err := run.Execute(ctx); err != nil {
		return err
	}
	return exportAfterTraining(cmd, run)
}

// refuseOnResume refuses what --resume would ignore: a resumed run keeps
// the configuration it was started with, so --config, --set and the flags
// bound to config keys are errors naming them.
func refuseOnResume(g *globalOptions, cmd *cobra.Command) error {
	var flags []string
	for flag := range flagKeys {
		if f := cmd.Flags().Lookup(flag); f != nil && f.Changed {
			flags = append(flags, "--"+flag)
		}
	}
	slices.Sort(flags)
	const why = "train --resume continues with the configuration the run was started with (bicyc learn trains a new task with changed keys, train --fork a new run)"
	if len(flags) > 0 {
		return fmt.Errorf("%s: %s would be ignored; leave it out", why, strings.Join(flags, ", "))
	}
	return g.refuse(why, cmd.Flag("config").Changed)
}

// exportAfterTraining exports a run that trained as its configuration says
// (train.ExportAfterTraining) and tells where.
func exportAfterTraining(cmd *cobra.Command, run *train.Run) error {
	dir, err := train.ExportAfterTraining(run)
	if err != nil || dir == "" {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "model exported to %s\n", dir)
	return nil
}

// warnBehind prints a warning when the run's model directory is older
// than its last checkpoint (train.Run.ModelBehind).
func warnBehind(w io.Writer, run *train.Run) {
	if behind, err := run.ModelBehind(); err == nil && behind != nil {
		fmt.Fprintf(w, "warning: %s\n", behind)
	}
}

// progressWriter is where progress bars go: the command's stderr when it is
// a terminal, nowhere otherwise (logs and CI get the per-epoch log lines).
func progressWriter(cmd *cobra.Command) io.Writer {
	if f, ok := cmd.ErrOrStderr().(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return f
	}
	return nil
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}
