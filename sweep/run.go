package sweep

import (
	"context"
	"encoding/json"
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
	"github.com/bicyc/bicyc/train"
)

// ErrConfigChanged is wrapped when a sweep directory already holds a run
// of the same name made with a different configuration: resuming it would
// mix two experiments.
var ErrConfigChanged = errors.New("run configuration changed")

// Options are the settings of Run that are not part of the
// definition.
type Options struct {
	// Train is passed to every run (log and progress writers).
	Train train.Options
	// Status receives one line per run as the sweep reaches it; nil means
	// none.
	Status io.Writer
	// Finish, if not nil, runs after the last run unless the sweep was
	// cancelled (bicyc sweep writes the report there); its error joins the
	// failures.
	Finish func() error
}

// Run runs the plan of spec in spec.Out, one run at a time. A
// finished run (metrics.json with completed_tasks == tasks) is skipped, a
// started one resumed with train.Resume, so a sweep can be stopped at any
// point (cancel ctx) and run again. A run whose directory holds a
// different configuration stops the sweep with ErrConfigChanged before it
// trains anything. A failing run is recorded and the sweep goes on; the
// failures come back joined at the end. Unless cancelled, Run then
// calls opts.Finish; the record is returned in every case.
//
// Runs of one seed share their first task: a new run whose configuration
// differs from an earlier run's only in keys that act after task 1 (method,
// ablation switches; train.LaterTaskKeys) starts from that run's task-1
// checkpoint (train.Fork), which gives the metrics a run from scratch would.
// Its WallSeconds then leave task 1 out; its metrics keep task 1's times.
//
// Every run that trains exports its model directory to <run>/model when its
// configuration enables export, by the rule of `bicyc train`
// (train.ExportAfterTraining); a sweep refuses export.dir, which every run
// would share.
func Run(ctx context.Context, spec Spec, configure Configure, opts Options) (*Record, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	status := opts.Status
	if status == nil {
		status = io.Discard
	}
	plan := spec.Plan()
	configs, err := spec.Configs(configure)
	if err != nil {
		return nil, err
	}
	for i, p := range plan {
		if err := sameConfig(filepath.Join(spec.Out, p.Name), configs[i]); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(spec.Out, 0o755); err != nil {
		return nil, err
	}
	rec := newRecord(spec, plan)
	save := func() error { return durable.WriteJSON(filepath.Join(spec.Out, RecordFile), rec) }
	if err := save(); err != nil {
		return rec, err
	}
	var failures []error
	for i, p := range plan {
		r := &rec.Runs[i]
		dir := filepath.Join(spec.Out, p.Name)
		state, done, err := runState(dir)
		if err != nil {
			return rec, err
		}
		var from source
		if state != StatusFinished && done == 0 {
			from = sourceOf(spec.Out, plan[:i], configs[:i], configs[i])
		}
		announceRun(status, fmt.Sprintf("sweep [%d/%d] %s", i+1, len(plan), p.Name), state, done, from)
		if state != StatusFinished {
			r.Status, r.Error = StatusRunning, ""
			if err := save(); err != nil {
				return rec, err
			}
		}
		start := time.Now()
		err = trainRun(ctx, dir, configs[i], state, from, opts.Train)
		// A skipped run's wall time stays what training it took (0 for a
		// run trained elsewhere and adopted, see runTotals).
		if state != StatusFinished {
			r.WallSeconds += time.Since(start).Seconds()
		}
		switch {
		case err == nil:
			r.Status = StatusFinished
		case ctx.Err() != nil:
			r.Status = StatusStopped
		default:
			r.Status, r.Error = StatusFailed, err.Error()
			failures = append(failures, fmt.Errorf("sweep run %s: %w", p.Name, err))
		}
		if serr := save(); serr != nil {
			return rec, serr
		}
		if ctx.Err() != nil {
			return rec, fmt.Errorf("sweep stopped at run %s (run the sweep again to resume): %w", p.Name, ctx.Err())
		}
	}
	if opts.Finish != nil {
		if err := opts.Finish(); err != nil {
			failures = append(failures, err)
		}
	}
	return rec, errors.Join(failures...)
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

// runState tells how far the run in dir got: pending (no run yet),
// started (with done completed tasks) or finished.
func runState(dir string) (state string, done int, err error) {
	if _, err := os.Stat(filepath.Join(dir, "config.yaml")); errors.Is(err, fs.ErrNotExist) {
		return StatusPending, 0, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "metrics.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return StatusRunning, 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	var s struct {
		Completed int `json:"completed_tasks"`
		Tasks     int `json:"tasks"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return "", 0, fmt.Errorf("%s: invalid run directory: %w", filepath.Join(dir, "metrics.json"), err)
	}
	if s.Tasks > 0 && s.Completed == s.Tasks {
		return StatusFinished, s.Completed, nil
	}
	return StatusRunning, s.Completed, nil
}

// source is the earlier run of the plan a pending run starts from: dir is
// "" for none; rescore tells whether the run takes all of dir's completed
// tasks (train.Rescore), otherwise only its first task (train.Fork).
type source struct {
	dir     string
	rescore bool
}

// sourceOf returns the earlier run of the plan the run with configuration
// cfg can start from. Best is one that differs only in classifier.* keys
// (train.RescoreDifferences; a classifier variant of the same seed): its
// completed tasks are evaluated again instead of trained. Otherwise one that
// differs only in train.LaterTaskKeys (another method or ablation cell of
// the same seed) shares its first task. Either must have completed task 1.
func sourceOf(out string, earlier []PlannedRun, configs []config.Config, cfg config.Config) source {
	var first source
	for j, p := range earlier {
		dir := filepath.Join(out, p.Name)
		if !train.HasFirstTask(dir) {
			continue
		}
		if len(train.RescoreDifferences(configs[j], cfg)) == 0 {
			return source{dir: dir, rescore: true}
		}
		if first.dir == "" && len(train.FirstTaskDifferences(configs[j], cfg)) == 0 {
			first.dir = dir
		}
	}
	return first
}

// trainRun brings the run in dir to its end from the given state and
// exports it as bicyc train does (train.ExportAfterTraining). A pending run
// starts from the run in from when it has one (see source). A
// finished run does not train again; it is exported only when export is
// enabled and its model directory is missing (a sweep killed between
// training and export).
func trainRun(ctx context.Context, dir string, cfg config.Config, state string, from source, opts train.Options) error {
	if state == StatusFinished {
		model := train.ModelDir(cfg, dir)
		if _, err := os.Stat(model); !cfg.Export.Enabled || err == nil {
			return nil
		}
		if err := train.Export(dir, model); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		return nil
	}
	var run *train.Run
	var err error
	switch {
	case state == StatusPending && from.rescore:
		run, err = train.Rescore(from.dir, cfg, dir, opts)
	case state == StatusPending && from.dir != "":
		run, err = train.Fork(from.dir, cfg, dir, opts)
	case state == StatusPending:
		run, err = train.New(cfg, dir, opts)
	default:
		run, err = train.Resume(dir, opts)
	}
	if err != nil {
		return err
	}
	err = run.Execute(ctx)
	if err == nil {
		_, err = train.ExportAfterTraining(run)
	}
	if cerr := run.Close(); err == nil {
		err = cerr
	}
	return err
}

// sameConfig returns an error wrapping ErrConfigChanged, naming the keys
// that differ, when dir holds a run whose config.yaml is not cfg; nil when
// it holds none.
func sameConfig(dir string, cfg config.Config) error {
	path := filepath.Join(dir, "config.yaml")
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
