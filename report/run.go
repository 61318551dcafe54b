package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/rundir"
	"github.com/bicyc/bicyc/sweep"
)

// ErrNoRuns is returned (wrapped) by Load when a directory holds neither a
// run nor a sweep nor run directories.
var ErrNoRuns = errors.New("no runs found")

// Run is one training run as its directory records it: the resolved
// config.yaml and the metrics.json that train writes after every task.
type Run struct {
	// Dir is the run directory.
	Dir string
	// Name is the base name of Dir, e.g. bicyc-nocyc-s2.
	Name string
	// Config is the run's resolved configuration (config.yaml).
	Config config.Config
	// Summary is the run's metrics.json.
	Summary rundir.Summary
	// WallSeconds is the wall-clock time a sweep spent on the run (all its
	// sessions together); 0 when unknown, e.g. for a run trained with
	// `bicyc train`.
	WallSeconds float64
	// VariantName is the run's named variant in its sweep
	// (sweep.NamedVariant), "" otherwise.
	VariantName string
}

// Variant is the run's variant.
func (r *Run) Variant() sweep.Variant {
	v := sweep.VariantOf(r.Config)
	v.Name = r.VariantName
	return v
}

// Finished reports whether the run completed every task of its stream.
func (r *Run) Finished() bool {
	return r.Summary.Tasks > 0 && r.Summary.Completed == r.Summary.Tasks
}

// FirstTaskFrom is the base name of the run that trained this run's first
// task when the run started from that run's task-1 checkpoint (train.Fork,
// metrics.json reports[0].trained_in), "" when the run trained it itself.
// A forked run's WallSeconds leave task 1 out; its StageSeconds include
// task 1's stage times, copied from the run that trained it.
func (r *Run) FirstTaskFrom() string {
	if len(r.Summary.Reports) == 0 || r.Summary.Reports[0].TrainedIn == "" {
		return ""
	}
	return runName(r.Summary.Reports[0].TrainedIn)
}

// runName is the base name of the run directory dir, as a report names runs.
func runName(dir string) string { return filepath.Base(filepath.Clean(dir)) }

// RescoredFrom is the base name of the run this run took every completed
// task from, evaluating each again with its own classifier (train.Rescore,
// a classifier variant): every report records where its task was trained
// (trained_in) and the last names that run; "" otherwise. Its StageSeconds
// hold that run's training times and its own evaluations; its WallSeconds
// only the evaluations.
func (r *Run) RescoredFrom() string {
	reps := r.Summary.Reports
	if len(reps) == 0 {
		return ""
	}
	for _, t := range reps {
		if t.TrainedIn == "" {
			return ""
		}
	}
	return runName(reps[len(reps)-1].TrainedIn)
}

// StageSeconds is the time the run's completed tasks spent in Stage I,
// Stage II, transport and evaluation, from metrics.json; it leaves out data
// loading, drift diagnostics, checkpoints and export.
func (r *Run) StageSeconds() float64 {
	var s float64
	for _, t := range r.Summary.Reports {
		s += stageSeconds(t)
	}
	return s
}

// stageSeconds is the time one task spent in Stage I, Stage II, transport
// and evaluation.
func stageSeconds(t rundir.TaskReport) float64 {
	return t.Stage1Seconds + t.Stage2Seconds + t.TransportSeconds + t.EvaluationSeconds
}

// HasDrift reports whether every completed task recorded drift diagnostics
// (eval.drift on).
func (r *Run) HasDrift() bool {
	if len(r.Summary.Reports) == 0 {
		return false
	}
	for _, t := range r.Summary.Reports {
		if t.Drift == nil {
			return false
		}
	}
	return true
}

// LoadRun reads the run in dir: config.yaml and metrics.json
// (rundir.ReadConfig, rundir.ReadSummary). A run that has not finished its
// first task has no metrics.json; LoadRun then returns an error wrapping
// fs.ErrNotExist. Corrupt or inconsistent files give errors wrapping
// rundir.ErrInvalidRun that name the file.
func LoadRun(dir string) (*Run, error) {
	r := &Run{Dir: dir, Name: runName(dir)}
	var err error
	if r.Config, err = rundir.ReadConfig(dir); err != nil {
		return nil, err
	}
	if r.Summary, err = rundir.ReadSummary(dir); err != nil {
		return nil, err
	}
	if r.Summary.Method != r.Config.Method || r.Summary.Seed != r.Config.Seed {
		return nil, fmt.Errorf("%s: %w: method %q seed %d, but config.yaml says method %q seed %d",
			filepath.Join(dir, rundir.MetricsFile), rundir.ErrInvalidRun, r.Summary.Method, r.Summary.Seed, r.Config.Method, r.Config.Seed)
	}
	return r, nil
}

// Set is what a report covers: one run, or the runs of a sweep or of a
// directory of run directories.
type Set struct {
	// Dir is the directory the report is about, and where it is written.
	Dir string
	// Sweep is the sweep's record (sweep.json), nil if Dir is not a sweep.
	Sweep *sweep.Record
	// Runs holds every run with at least one completed task, sorted by
	// variant (methods in sweep or name order, ablations last), then seed.
	Runs []*Run
	// Pending names the runs of the sweep without a completed task.
	Pending []string
	// Failed are the sweep's runs whose last worker recorded an error or
	// that were interrupted and not resumed yet (sweep.ReadStatus), with
	// what went wrong and where to read about it.
	Failed []FailedRun
}

// FailedRun is a run of a sweep that did not finish and is not running.
type FailedRun struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// Log is the scheduler's log of the cell, relative to the sweep
	// directory ("" for none); the run's own log is <name>/log.txt.
	Log string `json:"log,omitempty"`
}

// forgettingLimit is the sweep's selection.forgetting_limit, "" outside a
// sweep.
func (s *Set) forgettingLimit() string {
	if s.Sweep == nil {
		return ""
	}
	return s.Sweep.Spec.Selection.ForgettingLimit
}

// Load reads what dir holds: a run directory (it has metrics.json), a
// sweep (sweep.json lists its runs; each run's state is read from the
// directory, sweep.ReadStatus, so cells run on many machines merge), or any
// directory whose immediate sub-directories are runs. Errors name the file at fault; a directory
// with no run at all gives an error wrapping ErrNoRuns.
func Load(dir string) (*Set, error) {
	set := &Set{Dir: dir}
	if _, err := os.Stat(filepath.Join(dir, "metrics.json")); err == nil {
		r, err := LoadRun(dir)
		if err != nil {
			return nil, err
		}
		set.Runs = []*Run{r}
		return set, nil
	}
	rec, err := sweep.ReadStatus(dir)
	switch {
	case err == nil:
		set.Sweep = rec
		for _, rr := range rec.Runs {
			if rr.Status == sweep.StatusFailed || rr.Status == sweep.StatusStopped {
				set.Failed = append(set.Failed, FailedRun{Name: rr.Name, Status: rr.Status, Error: rr.Error, Log: rr.Log})
			}
			r, err := LoadRun(filepath.Join(dir, rr.Name))
			if errors.Is(err, fs.ErrNotExist) {
				set.Pending = append(set.Pending, rr.Name)
				continue
			}
			if err != nil {
				return nil, err
			}
			r.WallSeconds, r.VariantName = rr.WallSeconds, rr.Variant
			set.Runs = append(set.Runs, r)
		}
	case errors.Is(err, fs.ErrNotExist):
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			sub := filepath.Join(dir, e.Name())
			if !e.IsDir() {
				continue
			}
			if _, err := os.Stat(filepath.Join(sub, "metrics.json")); err != nil {
				continue
			}
			r, err := LoadRun(sub)
			if err != nil {
				return nil, err
			}
			set.Runs = append(set.Runs, r)
		}
	case errors.Is(err, sweep.ErrInvalidRecord):
		return nil, fmt.Errorf("%w: %w", rundir.ErrInvalidRun, err)
	default:
		return nil, err
	}
	if len(set.Runs) == 0 {
		return nil, fmt.Errorf("%s: %w (a run directory has metrics.json, a sweep has %s)", dir, ErrNoRuns, sweep.RecordFile)
	}
	set.sortRuns()
	return set, nil
}

// sortRuns orders runs by variant, then seed: the main methods in the order
// the sweep lists them (bicyc, adagauss, finetune otherwise), then the named
// variants, ablations of bicyc after them from most to least complete.
func (s *Set) sortRuns() {
	order := config.Methods()
	if s.Sweep != nil && len(s.Sweep.Spec.Methods) > 0 {
		order = s.Sweep.Spec.Methods
	}
	rank := func(v sweep.Variant) int {
		i := slices.Index(order, v.Method)
		if i < 0 {
			i = len(order)
		}
		ab := 0
		if !v.Bi {
			ab += 2
		}
		if !v.Cyc {
			ab++
		}
		if v.Name != "" {
			i += 50
		}
		return ab*100 + i
	}
	slices.SortStableFunc(s.Runs, func(a, b *Run) int {
		va, vb := a.Variant(), b.Variant()
		if ra, rb := rank(va), rank(vb); ra != rb {
			return ra - rb
		}
		if va.Method != vb.Method {
			return strings.Compare(string(va.Method), string(vb.Method))
		}
		if va.Name != vb.Name {
			return strings.Compare(va.Name, vb.Name)
		}
		switch {
		case a.Summary.Seed < b.Summary.Seed:
			return -1
		case a.Summary.Seed > b.Summary.Seed:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
}
