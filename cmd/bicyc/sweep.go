package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/report"
	"github.com/bicyc/bicyc/sweep"
	"github.com/bicyc/bicyc/train"
)

// sweepOptions are the flags of bicyc sweep; each overrides the sweep file
// (--sweep) only when given.
type sweepOptions struct {
	file     string
	seeds    int
	methods  []string
	ablation bool
	out      string
	quick    bool
}

func newSweepCmd(g *globalOptions) *cobra.Command {
	opts := &sweepOptions{}
	cmd := &cobra.Command{
		Use:   "sweep [--sweep <file>] [--config <file>] [--seeds <n>] [--methods <list>] [--ablation] [--out <dir>] [--set <key=value>]... [--quick]",
		Short: "Train a grid of runs (seeds x methods, optional L_bi x L_cyc ablation), then write the report",
		Long: `sweep trains every run of a grid one after another: seeds 0..n-1 x methods, and with
--ablation the bicyc runs with loss.bi and/or loss.cyc off. Run i lives in
<out>/<method>[-nobi|-nocyc|-nobi-nocyc]-s<seed>. A finished run is skipped and a started
one resumed, so a sweep can be interrupted (Ctrl-C) and started again with the same
command. <out>/sweep.json records the grid and the state of each run; at the end the
report (bicyc report) is written to <out>/report.md.

--sweep reads a sweep definition (configs/sweeps/*.yaml: config, out, seeds, methods,
ablation, sets, variants); flags given on the command line override it, --set adds to its
sets. A variant is a method with extra sets (for example an extension switched on), run as
<out>/<method>-<name>-s<seed> and reported as <method>+<name>. When the runs hold out a
validation split (data.val_per_class), the report adds its A_last and names the variant
that is best on it: choose on that column, not on the test ones.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := sweepSpec(g, opts, cmd.Flags().Changed)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runSweep(ctx, spec, cmd)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.file, "sweep", "", "sweep definition `file` (configs/sweeps/)")
	f.IntVar(&opts.seeds, "seeds", 3, "number of seeds `n` (seeds 0..n-1)")
	f.StringSliceVar(&opts.methods, "methods", methodsFlag(config.Methods()), "comma-separated `methods`")
	f.BoolVar(&opts.ablation, "ablation", false, "add the bicyc runs with loss.bi and/or loss.cyc off")
	f.StringVar(&opts.out, "out", "", "sweep `dir`ectory (default runs/sweep-<config name>)")
	f.BoolVar(&opts.quick, "quick", false, "quick profile for every run (config key quick)")
	return cmd
}

// sweepSpec builds the sweep definition from the sweep file, if any, and
// the flags that changed.
func sweepSpec(g *globalOptions, opts *sweepOptions, changed func(string) bool) (sweep.Spec, error) {
	spec := sweep.Spec{Seeds: opts.seeds, Methods: methodsOf(opts.methods), Ablation: opts.ablation}
	if opts.file != "" {
		var err error
		if spec, err = sweep.ReadSpec(opts.file); err != nil {
			return sweep.Spec{}, err
		}
		if changed("seeds") {
			spec.Seeds = opts.seeds
		}
		if changed("methods") {
			spec.Methods = methodsOf(opts.methods)
		}
		if changed("ablation") {
			spec.Ablation = opts.ablation
		}
	}
	if g.configFile != "" {
		spec.Config = g.configFile
	}
	if spec.Config == "" {
		return sweep.Spec{}, fmt.Errorf("sweep: no config: give --config <file> or --sweep <file>")
	}
	if opts.out != "" {
		spec.Out = opts.out
	}
	if spec.Out == "" {
		spec.Out = filepath.Join("runs", "sweep-"+configName(spec.Config))
	}
	spec.Sets = append(spec.Sets, g.sets...)
	if opts.quick {
		spec.Sets = append(spec.Sets, "quick=true")
	}
	return spec, spec.Validate()
}

// methodsOf reads the --methods flag; the sweep's Validate names any that
// is not a method.
func methodsOf(names []string) []config.Method {
	ms := make([]config.Method, len(names))
	for i, n := range names {
		ms[i] = config.Method(n)
	}
	return ms
}

// methodsFlag is the default value of --methods.
func methodsFlag(ms []config.Method) []string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = string(m)
	}
	return names
}

// runSweep runs spec with configurations read exactly as bicyc train reads
// them (the sweep's config file, BICYC_* variables, then the sets).
func runSweep(ctx context.Context, spec sweep.Spec, cmd *cobra.Command) error {
	configure := func(sets []string) (config.Config, error) {
		return loadConfig(&globalOptions{configFile: spec.Config, sets: sets}, nil)
	}
	errOut := cmd.ErrOrStderr()
	_, err := sweep.Run(ctx, spec, configure, sweep.Options{
		Train:  train.Options{Log: errOut, Progress: progressWriter(cmd)},
		Status: errOut,
		Finish: func() error {
			if _, err := report.Generate(spec.Out, report.Options{}); err != nil {
				return fmt.Errorf("report: %w", err)
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "report written to %s\n", filepath.Join(spec.Out, "report.md"))
	return nil
}
