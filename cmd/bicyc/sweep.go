package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/lockfile"
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

	// What to do instead of running every cell here: at most one of them.
	plan      bool
	status    bool
	cell      int
	wave      int
	waveIndex int
	submit    string
	emit      string
	dryRun    bool
	lease     time.Duration
	// maxParallel caps the cells of a wave at once on either scheduler.
	maxParallel int
	waitHeld    bool

	slurm sweep.Slurm
	k8s   sweep.Kubernetes
}

// sweepModes are the flags that choose what bicyc sweep does; none means
// running every cell in this process.
var sweepModes = []string{"plan", "status", "cell", "wave", "submit", "emit"}

func newSweepCmd(g *globalOptions) *cobra.Command {
	opts := &sweepOptions{}
	cmd := &cobra.Command{
		Use:   "sweep [--sweep <file>] [--config <file>] [--seeds <n>] [--methods <list>] [--ablation] [--out <dir>] [--set <key=value>]... [--quick] [--plan | --cell <n> | --wave <w> --wave-index <i> | --status | --submit slurm [--dry-run] | --emit k8s]",
		Short: "Train a grid of runs (seeds x methods, optional L_bi x L_cyc ablation), then write the report",
		Long:  sweepLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runSweepCmd(ctx, g, opts, cmd)
		},
	}
	addSweepFlags(cmd.Flags(), opts)
	cmd.MarkFlagsMutuallyExclusive(sweepModes...)
	cmd.MarkFlagsRequiredTogether("wave", "wave-index")
	return cmd
}

const sweepLong = `sweep trains every run of a grid one after another: seeds 0..n-1 x methods, and with
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
that is best on it: choose on that column, not on the test ones.

On many machines (docs/cluster.md): every run is a cell that any worker can run. --plan
freezes the grid into the sweep directory (sweep.json, cells/<run>.yaml with every
resolved configuration) and lists the cells with the cell each waits for (a seed's first
run before the runs that fork its task 1, a run before its classifier rescoring).
--cell N runs one cell from that plan (resumable, idempotent; a cell another live worker
holds is refused, one whose worker died is taken over); --status lists the cells' states
with their logs (exit status 1 when any failed). --submit slurm writes job arrays (each cell's
task starts after its source's task, aftercorr; --max-parallel caps each array) and a report
job that runs once they have ended into <out>/slurm and submits them with sbatch (--dry-run only writes them);
--emit k8s writes Kubernetes Indexed Jobs into <out>/k8s. bicyc report <out> merges the
runs from their directories. Examples:
  bicyc sweep --sweep configs/sweeps/smoke.yaml --out /shared/smoke --plan
  bicyc sweep --out /shared/smoke --cell 2
  bicyc sweep --sweep configs/sweeps/smoke.yaml --out /shared/smoke --submit slurm --partition cpu --time 1:00:00 --cpus-per-task 2
  bicyc sweep --out /shared/smoke --status
  bicyc sweep --sweep configs/sweeps/smoke.yaml --out /shared/smoke --emit k8s --image registry/bicyc:1 --claim sweeps`

// addSweepFlags defines sweep's flags into opts: the grid, the mode (plan, cell, wave, status, submit,
// emit), then Slurm's options and Kubernetes'.
func addSweepFlags(f *pflag.FlagSet, opts *sweepOptions) {
	f.StringVar(&opts.file, "sweep", "", "sweep definition `file` (configs/sweeps/)")
	f.IntVar(&opts.seeds, "seeds", 3, "number of seeds `n` (seeds 0..n-1)")
	f.StringSliceVar(&opts.methods, "methods", methodsFlag(config.Methods()), "comma-separated `methods`")
	f.BoolVar(&opts.ablation, "ablation", false, "add the bicyc runs with loss.bi and/or loss.cyc off")
	f.StringVar(&opts.out, "out", "", "sweep `dir`ectory (default runs/sweep-<config name>)")
	f.BoolVar(&opts.quick, "quick", false, "quick profile for every run (config key quick)")
	f.BoolVar(&opts.plan, "plan", false, "write the plan into the sweep directory and list its cells")
	f.BoolVar(&opts.status, "status", false, "list the state of every cell of the sweep directory (--out or the sweep file's)")
	f.IntVar(&opts.cell, "cell", 0, "run only cell `n` of the sweep directory's plan")
	f.IntVar(&opts.wave, "wave", 0, "run the cell of wave `w` given by --wave-index (Kubernetes Indexed Jobs)")
	f.IntVar(&opts.waveIndex, "wave-index", 0, "index `i` of the cell within --wave")
	f.StringVar(&opts.submit, "submit", "", "submit the sweep to a `scheduler`: slurm")
	f.StringVar(&opts.emit, "emit", "", "write the sweep's manifests for a `platform`: k8s")
	f.BoolVar(&opts.dryRun, "dry-run", false, "with --submit: write the scripts, do not submit them")
	f.DurationVar(&opts.lease, "lease", lockfile.DefaultLease, "how long a cell's lock outlives its worker's last renewal (`duration`; workers on other hosts)")
	f.StringVar(&opts.slurm.Partition, "partition", "", "Slurm `partition`")
	f.StringVar(&opts.slurm.Time, "time", "", "Slurm time limit per cell (`time`, e.g. 2:00:00)")
	f.IntVar(&opts.slurm.CPUsPerTask, "cpus-per-task", 0, "Slurm CPUs per cell (`n`)")
	f.StringVar(&opts.slurm.Mem, "mem", "", "Slurm memory per cell (`size`, e.g. 8G)")
	f.StringVar(&opts.slurm.Account, "account", "", "Slurm `account`")
	f.StringArrayVar(&opts.slurm.Extra, "sbatch-arg", nil, "another sbatch option for every array, `--opt=value` (repeatable)")
	f.StringVar(&opts.slurm.Bicyc, "bicyc", "", "the bicyc `binary` as the workers see it (default: this one)")
	f.BoolVar(&opts.waitHeld, "wait-held", false, "with --cell or --wave: wait while another worker holds the cell instead of refusing it")
	f.BoolVar(&opts.slurm.Requeue, "requeue", false, "Slurm: a task near its --time limit stops its cell and goes back to the queue, to resume it")
	f.IntVar(&opts.maxParallel, "max-parallel", 0, "at most `n` cells of a wave at once (Slurm: --array=...%n; Kubernetes: the Jobs' parallelism); 0: no cap")
	f.StringVar(&opts.k8s.Image, "image", "", "Kubernetes: container `image` with bicyc on PATH and the datasets")
	f.StringVar(&opts.k8s.Namespace, "namespace", "", "Kubernetes `namespace`")
	f.StringVar(&opts.k8s.Claim, "claim", "bicyc-sweeps", "Kubernetes PersistentVolumeClaim `name` holding the sweep directory")
	f.StringVar(&opts.k8s.MountPath, "mount", "/sweeps", "where the pods mount the claim (`path`)")
	f.StringVar(&opts.k8s.SweepDir, "pod-out", "", "the sweep directory in the pods (`path`; default <mount>/<base name of --out>)")
	f.StringVar(&opts.k8s.ClaimSize, "claim-size", "", "also write the claim, ReadWriteMany, of this `size` (e.g. 20Gi)")
	f.StringVar(&opts.k8s.StorageClass, "storage-class", "", "storage `class` of the claim")
	f.StringVar(&opts.k8s.CPU, "cpu", "", "Kubernetes CPU request and limit per cell (`quantity`; the training's threads follow it)")
	f.StringVar(&opts.k8s.Memory, "memory", "", "Kubernetes memory request and limit per cell (`quantity`)")
	f.IntVar(&opts.k8s.Parallelism, "parallelism", 0, "Kubernetes pods per wave at once (`n`; 0: all)")
	f.StringToStringVar(&opts.k8s.NodeSelector, "node-selector", nil, "Kubernetes: run the pods on nodes with this label, `key=value` (repeatable)")
	f.StringArrayVar(&opts.k8s.Tolerations, "toleration", nil, "Kubernetes: tolerate the taint `key[=value]:effect` (repeatable)")
	f.IntVar(&opts.k8s.GPUs, "gpus", 0, "Kubernetes: `n` GPUs per cell (nvidia.com/gpu)")
}

// runSweepCmd does what the flags ask: run every cell here, or one of the
// sweepModes.
func runSweepCmd(ctx context.Context, g *globalOptions, opts *sweepOptions, cmd *cobra.Command) error {
	changed := cmd.Flags().Changed
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if opts.dryRun && !changed("submit") {
		return fmt.Errorf("sweep: --dry-run goes with --submit")
	}
	trainOpts := train.Options{Log: errOut, Progress: progressWriter(cmd)}
	trainer := func(ctx context.Context, dir string, cfg config.Config, from string, rescore bool) error {
		return train.Complete(ctx, dir, cfg, from, rescore, trainOpts)
	}
	workerOpts := sweep.Options{Train: trainer, Status: errOut, Lease: opts.lease, WaitHeld: opts.waitHeld}
	switch {
	case changed("status"), changed("cell"), changed("wave"):
		if err := g.refuse("sweep --status, --cell and --wave read the plan frozen in the sweep directory", cmd.Flag("config").Changed); err != nil {
			return err
		}
		dir, err := sweepDir(opts)
		if err != nil {
			return err
		}
		if changed("status") {
			rec, err := sweep.ReadStatus(dir)
			if err != nil {
				return err
			}
			fmt.Fprint(out, sweep.FormatStatus(dir, rec))
			if n := rec.Count(sweep.StatusFailed); n > 0 {
				return fmt.Errorf("sweep: %d of %d cells failed (their logs are listed above)", n, len(rec.Runs))
			}
			return nil
		}
		plan, err := sweep.ReadPlan(dir)
		if err != nil {
			return err
		}
		cell := opts.cell
		if changed("wave") {
			if cell, err = plan.WaveCell(opts.wave, opts.waveIndex); err != nil {
				return err
			}
		}
		return sweep.RunCell(ctx, plan, cell, workerOpts)
	}
	spec, err := sweepSpec(g, opts, changed)
	if err != nil {
		return err
	}
	switch {
	case changed("plan"), changed("submit"), changed("emit"):
		if changed("submit") {
			// The jobs run elsewhere: they need the directory by its full path.
			if spec.Out, err = filepath.Abs(spec.Out); err != nil {
				return err
			}
		}
		plan, err := sweep.NewPlan(spec, sweepConfigure(spec))
		if err != nil {
			return err
		}
		switch {
		case changed("submit"):
			return submitSweep(ctx, plan, opts, out)
		case changed("emit"):
			return emitSweep(plan, opts, out)
		}
		if err := plan.Write(); err != nil {
			return err
		}
		fmt.Fprint(out, plan.Format())
		return nil
	}
	return runSweep(ctx, spec, cmd, workerOpts)
}

// sweepDir is the sweep directory a worker or --status reads: --out, else
// the sweep file's out.
func sweepDir(opts *sweepOptions) (string, error) {
	if opts.out != "" {
		return opts.out, nil
	}
	if opts.file != "" {
		spec, err := sweep.ReadSpec(opts.file)
		if err != nil {
			return "", err
		}
		if spec.Out != "" {
			return spec.Out, nil
		}
	}
	return "", fmt.Errorf("sweep: which sweep directory? give --out <dir> (or --sweep <file> with out:)")
}

// submitSweep writes the plan's sbatch scripts and, unless --dry-run,
// submits them.
func submitSweep(ctx context.Context, plan *sweep.Plan, opts *sweepOptions, out io.Writer) error {
	if opts.submit != "slurm" {
		return fmt.Errorf("sweep: --submit %q: the scheduler supported is slurm (for Kubernetes, --emit k8s)", opts.submit)
	}
	s := opts.slurm
	var err error
	if s.Bicyc == "" {
		if s.Bicyc, err = os.Executable(); err != nil {
			return err
		}
	}
	if s.Bicyc, err = filepath.Abs(s.Bicyc); err != nil {
		return err
	}
	if s.Workdir, err = os.Getwd(); err != nil {
		return err
	}
	s.Lease, s.MaxParallel = opts.lease, opts.maxParallel
	submit, skipped, err := sweep.WriteSlurm(plan, s)
	if err != nil {
		return err
	}
	for _, c := range skipped {
		fmt.Fprintf(out, "left out %s\n", c)
	}
	if opts.dryRun {
		fmt.Fprintf(out, "wrote %s (submit with: bash %s)\n", filepath.Dir(submit), submit)
		return nil
	}
	jobs, report, err := sweep.SubmitSlurm(ctx, submit)
	if err != nil {
		return err
	}
	for _, a := range jobs {
		fmt.Fprintf(out, "wave %d cells %s: job %s\n", a.Wave, a.Cells, a.Job)
	}
	if report != "" {
		fmt.Fprintf(out, "report: job %s (writes %s once every wave has ended)\n", report, filepath.Join(plan.Spec.Out, "report.md"))
	}
	fmt.Fprintf(out, "submitted %d job arrays; follow them with: bicyc sweep --out %s --status\n", len(jobs), plan.Spec.Out)
	return nil
}

// emitSweep writes the plan's Kubernetes manifests.
func emitSweep(plan *sweep.Plan, opts *sweepOptions, out io.Writer) error {
	if opts.emit != "k8s" {
		return fmt.Errorf("sweep: --emit %q: the platform supported is k8s", opts.emit)
	}
	k := opts.k8s
	if k.SweepDir == "" {
		k.SweepDir = path.Join(k.MountPath, filepath.Base(plan.Spec.Out))
	}
	k.Lease = opts.lease
	if opts.maxParallel > 0 {
		if k.Parallelism > 0 && k.Parallelism != opts.maxParallel {
			return fmt.Errorf("sweep: --max-parallel %d and --parallelism %d disagree: give one", opts.maxParallel, k.Parallelism)
		}
		k.Parallelism = opts.maxParallel
	}
	files, err := sweep.WriteKubernetes(plan, k)
	if err != nil {
		return err
	}
	for _, f := range files {
		fmt.Fprintln(out, f)
	}
	fmt.Fprintf(out, "copy %s to the claim %s as %s, then run: bash %s\n", plan.Spec.Out, k.Claim, k.SweepDir, files[len(files)-1])
	return nil
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

// sweepConfigure reads the configurations of spec's runs exactly as bicyc
// train reads them (the sweep's config file, BICYC_* variables, then the
// sets).
func sweepConfigure(spec sweep.Spec) sweep.Configure {
	return func(sets []string) (config.Config, error) {
		return loadConfig(&globalOptions{configFile: spec.Config, sets: sets}, nil)
	}
}

// runSweep runs every cell of spec in this process, then writes the report.
func runSweep(ctx context.Context, spec sweep.Spec, cmd *cobra.Command, opts sweep.Options) error {
	opts.Finish = func() error {
		if _, err := report.Generate(spec.Out, report.Options{}); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		return nil
	}
	_, err := sweep.Run(ctx, spec, sweepConfigure(spec), opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "report written to %s\n", filepath.Join(spec.Out, "report.md"))
	return nil
}
