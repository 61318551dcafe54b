package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/lockfile"
	"github.com/bicyc/bicyc/rundir"
)

// ErrConfigChanged is wrapped when a sweep directory already holds a run
// of the same name made with a different configuration: resuming it would
// mix two experiments.
var ErrConfigChanged = errors.New("run configuration changed")

// Options are the settings of Run and RunCell that are not part of the
// definition.
type Options struct {
	// Train brings every run to its end; it must be set.
	Train Trainer
	// Status receives one line per run as the sweep reaches it; nil means
	// none.
	Status io.Writer
	// Finish, if not nil, runs after the last run unless the sweep was
	// cancelled (bicyc sweep writes the report there); its error joins the
	// failures.
	Finish func() error
	// Lease is how long a cell's lock outlives its worker's last renewal
	// when the worker runs on another host (see lockfile.Acquire); 0 means
	// lockfile.DefaultLease.
	Lease time.Duration
	// WaitHeld makes RunCell wait while another worker holds the cell
	// (until that worker ends, or its lock can be taken over once its
	// lease expires) instead of returning an error wrapping lockfile.ErrHeld: a task Slurm
	// requeued on another node waits out its dead predecessor's lease.
	WaitHeld bool
}

// Trainer brings the run in dir to its end and exports it as bicyc train
// does, from wherever it stopped: a started run resumes, a finished one is
// exported only when export is enabled and its model directory is missing
// (a sweep killed between training and export). A run not started yet
// starts from the run in from ("" for none): from all of from's completed
// tasks when rescore (a classifier variant, train.Rescore), otherwise from
// its first task (train.Fork). train.Complete is one; taking it as a
// function keeps this package, and the report that reads sweeps, apart
// from the training engine.
type Trainer func(ctx context.Context, dir string, cfg config.Config, from string, rescore bool) error

// Run runs the plan of spec in spec.Out, one cell at a time in plan order,
// each as RunCell would: a finished run is skipped, a started one resumed
// with train.Resume, so a sweep can be stopped at any point (cancel ctx)
// and run again, and it can share its directory with `bicyc sweep --cell`
// workers (a cell another worker holds is a failure here). It first
// freezes the plan (Plan.Write); a run whose directory holds a different
// configuration stops the sweep with ErrConfigChanged before it trains
// anything. A failing run is recorded and the sweep goes on; the failures
// come back joined at the end. Unless cancelled, Run then calls
// opts.Finish; the record (ReadStatus) is returned in every case.
//
// Runs of one seed share their first task: a cell that waits for another
// (Cell.WaitsFor) starts from that run's task-1 checkpoint (train.Fork),
// which gives the metrics a run from scratch would, or, when only the
// classifier differs, evaluates that run's tasks again (train.Rescore). Its
// WallSeconds then leave task 1 out; its metrics keep task 1's times.
//
// Every run that trains exports its model directory to <run>/model when its
// configuration enables export, by the rule of `bicyc train`
// (train.ExportAfterTraining); a sweep refuses export.dir, which every run
// would share.
func Run(ctx context.Context, spec Spec, configure Configure, opts Options) (*Record, error) {
	plan, err := NewPlan(spec, configure)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(spec.Out, 0o755); err != nil {
		return nil, err
	}
	if err := plan.Write(); err != nil {
		return nil, err
	}
	var failures []error
	for i, c := range plan.Cells {
		err := runCell(ctx, plan, i, opts, fmt.Sprintf("sweep [%d/%d] %s", i+1, len(plan.Cells), c.Run.Name))
		rec, serr := saveStatus(spec.Out)
		if serr != nil {
			return rec, serr
		}
		if ctx.Err() != nil {
			return rec, fmt.Errorf("sweep stopped at run %s (run the sweep again to resume): %w", c.Run.Name, ctx.Err())
		}
		if err != nil {
			failures = append(failures, fmt.Errorf("sweep run %s: %w", c.Run.Name, err))
		}
	}
	if opts.Finish != nil {
		if err := opts.Finish(); err != nil {
			failures = append(failures, err)
		}
	}
	rec, err := ReadStatus(spec.Out)
	if err != nil {
		failures = append(failures, err)
	}
	return rec, errors.Join(failures...)
}

// saveStatus rewrites sweep.json with every run's state now (ReadStatus),
// so that the record a one-process sweep leaves is current after every
// run, as it was before sweeps had cells.
func saveStatus(out string) (*Record, error) {
	rec, err := ReadStatus(out)
	if err != nil {
		return nil, err
	}
	return rec, durable.WriteJSON(filepath.Join(out, RecordFile), rec)
}

// waitHeldForever is WaitHeld's wait: until the holder ends, its lease
// expires or the context is cancelled.
const waitHeldForever = 1 << 62

// ErrWaiting is wrapped when a cell cannot start yet: the cell it waits
// for has not finished.
var ErrWaiting = errors.New("cell waits for another")

// RunCell runs cell i of plan (read from its sweep directory with
// ReadPlan) to its end, as one worker of a sweep spread over many
// processes or machines: it takes the cell's lock (lockfile.Acquire; a cell a
// live worker holds is an error wrapping lockfile.ErrHeld, one whose worker died
// is taken over), skips a finished run, resumes a started one, and starts a
// pending one from the cell it waits for, which must have finished (else an
// error wrapping ErrWaiting). It records the outcome in cells/<name>.json,
// which ReadStatus reads. Running a cell again is harmless.
func RunCell(ctx context.Context, plan *Plan, i int, opts Options) error {
	c, err := plan.Cell(i)
	if err != nil {
		return err
	}
	return runCell(ctx, plan, i, opts, fmt.Sprintf("cell %d %s", i, c.Run.Name))
}

func runCell(ctx context.Context, plan *Plan, i int, opts Options, prefix string) error {
	if opts.Train == nil {
		return errors.New("sweep: Options.Train is not set: nothing can train the cell")
	}
	status := opts.Status
	if status == nil {
		status = io.Discard
	}
	lease := opts.Lease
	if lease <= 0 {
		lease = lockfile.DefaultLease
	}
	out, c, dir := plan.Spec.Out, plan.Cells[i], plan.Dir(i)
	if err := sameConfig(dir, plan.Configs[i]); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(out, CellsDir), 0o755); err != nil {
		return err
	}
	lopts := lockfile.Options{Lease: lease}
	if opts.WaitHeld {
		lopts.Wait = waitHeldForever
		lopts.Waiting = func(holder lockfile.Owner) {
			fmt.Fprintf(status, "%s: held by %s; waiting until it is free\n", prefix, holder)
		}
	}
	lock, lctx, took, err := lockfile.Acquire(ctx, cellFile(out, c.Run.Name, ".lock"), lopts)
	if err != nil {
		return err
	}
	defer lock.Release()
	if took != "" {
		fmt.Fprintf(status, "%s: %s\n", prefix, took)
	}
	state, done, err := runState(dir)
	if err != nil {
		return err
	}
	var from source
	if state == StatusPending && c.WaitsFor >= 0 {
		src := plan.Cells[c.WaitsFor]
		r := RunRecord{Name: src.Run.Name}
		if err := overlayState(out, src.Index, &r); err != nil {
			return err
		}
		if r.Status != StatusFinished {
			return fmt.Errorf("%s: %w: it starts from cell %d %s, which is %s", prefix, ErrWaiting, src.Index, src.Run.Name, r.Status)
		}
		from = source{dir: plan.Dir(src.Index), rescore: c.Rescore}
	}
	prev, err := previousWall(out, i, c.Run.Name)
	if err != nil {
		return err
	}
	announceRun(status, prefix, state, done, from)
	start := time.Now()
	err = opts.Train(lctx, dir, plan.Configs[i], from.dir, from.rescore)
	o := cellOutcome{Status: StatusFinished, WallSeconds: prev}
	// A skipped run's wall time stays what training it took (0 for a
	// run trained elsewhere and adopted, see runTotals).
	if state != StatusFinished {
		o.WallSeconds += time.Since(start).Seconds()
	}
	switch {
	case err == nil:
	case lctx.Err() != nil:
		o.Status = StatusStopped
		if cause := context.Cause(lctx); errors.Is(cause, lockfile.ErrLost) {
			err = cause
		}
	default:
		o.Status, o.Error = StatusFailed, err.Error()
	}
	if werr := writeOutcome(out, c.Run.Name, o); werr != nil && err == nil {
		err = werr
	}
	return err
}

// previousWall is the wall time earlier sessions spent on cell i: its
// outcome's, else what an older one-process sweep recorded in sweep.json.
func previousWall(out string, i int, name string) (float64, error) {
	o, ok, err := readOutcome(out, name)
	if err != nil || ok {
		return o.WallSeconds, err
	}
	rec, err := ReadRecord(filepath.Join(out, RecordFile))
	if err != nil || i >= len(rec.Runs) || rec.Runs[i].Name != name {
		return 0, nil
	}
	return rec.Runs[i].WallSeconds, nil
}

// announceRun writes the status line of a run about to be reached: prefix,
// then whether it is skipped, resumed after done tasks, rescored from or
// starts from the first task of another run.
func announceRun(status io.Writer, prefix, state string, done int, from source) {
	switch {
	case state == StatusFinished:
		fmt.Fprintf(status, "%s: finished, skipped\n", prefix)
	case done > 0:
		fmt.Fprintf(status, "%s: resuming after task %d\n", prefix, done)
	case from.rescore:
		fmt.Fprintf(status, "%s: tasks of %s evaluated again with this run's classifier\n", prefix, filepath.Base(from.dir))
	case from.dir != "":
		fmt.Fprintf(status, "%s: task 1 from %s\n", prefix, filepath.Base(from.dir))
	default:
		fmt.Fprintf(status, "%s\n", prefix)
	}
}

// runState tells how far the run in dir got (rundir.ReadProgress): pending
// (no run yet), started (with done completed tasks) or finished.
func runState(dir string) (state string, done int, err error) {
	p, err := rundir.ReadProgress(dir)
	switch {
	case err != nil:
		return "", 0, err
	case !p.Started:
		return StatusPending, 0, nil
	case p.Finished():
		return StatusFinished, p.Completed, nil
	}
	return StatusRunning, p.Completed, nil
}

// source is the earlier run of the plan a pending run starts from: dir is
// "" for none; rescore tells whether the run takes all of dir's completed
// tasks (train.Rescore), otherwise only its first task (train.Fork).
type source struct {
	dir     string
	rescore bool
}

// sameConfig returns an error wrapping ErrConfigChanged, naming the keys
// that differ, when dir holds a run whose config.yaml is not cfg; nil when
// it holds none.
func sameConfig(dir string, cfg config.Config) error {
	path := filepath.Join(dir, rundir.ConfigFile)
	have, err := config.ReadRun(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("invalid run directory: %w", err)
	}
	if err := have.Validate(); err != nil {
		return fmt.Errorf("%s: invalid run directory: %w", path, err)
	}
	diff := config.ExperimentDiff(have, cfg)
	if len(diff) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w: %s (choose another sweep output directory, or delete the run)",
		path, ErrConfigChanged, strings.Join(diff, "; "))
}
