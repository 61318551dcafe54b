package train

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/rundir"
)

// Rescore creates the run directory dir for cfg from the run in src without
// training: cfg may differ from src's configuration only in config.ClassifierKeys,
// which act only when a task is evaluated, and in keys that change nothing
// a run computes (config.RescoreDifferences), so every task src completed trains
// exactly the same under cfg. Rescore takes src's task stream and,
// for each completed task, its checkpoint, evaluates the task again (test
// set and validation split) with cfg's classifier, and writes the
// checkpoint and the metrics; training records (losses, stage times,
// transport choices, drift) stay src's, and each task's TaskReport.TrainedIn
// names src unless it already named the run that trained the task. A
// difference in any other key is an error wrapping ErrForkMismatch that
// names the keys.
//
// The run is what training cfg from scratch would have given after those
// tasks (tested against such a run), in the time of an evaluation per task:
// a sweep scores a classifier variant this way. If src is unfinished, the
// returned run continues with Execute as a resumed one would. Nothing in src
// is modified.
func Rescore(src string, cfg config.Config, dir string, opts Options) (*Run, error) {
	_, rec, err := readSource(src, cfg, config.RescoreDifferences)
	if err != nil {
		return nil, fmt.Errorf("rescore %s (only classifier.* may differ): %w", src, err)
	}
	last, err := loadLatestCheckpoint(src, cfg)
	if err != nil {
		return nil, fmt.Errorf("rescore %s: %w", src, err)
	}
	if last == nil || last.Completed == 0 {
		return nil, fmt.Errorf("rescore %s: no completed task", src)
	}
	r, err := derivedRun(cfg, dir, opts, rec)
	if err != nil {
		return nil, err
	}
	if err := durable.WriteJSON(filepath.Join(dir, rundir.StreamFile), r.streamRecord()); err != nil {
		return r.fail(err)
	}
	r.log.printf("run %s: %s on %s, %d tasks, seed %d, tasks 1-%d taken from %s and evaluated again with this run's classifier",
		dir, cfg.Method, cfg.Data.Kind, len(r.stream.Tasks), cfg.Seed, last.Completed, src)
	if err := r.rescoreTasks(src, last); err != nil {
		return r.fail(fmt.Errorf("rescore %s: %w", src, err))
	}
	// As in Fork, config.yaml comes after the checkpoints: it marks a run
	// that can be resumed, and a rescore killed before it is started again.
	if err := writeConfig(filepath.Join(dir, rundir.ConfigFile), cfg); err != nil {
		return r.fail(err)
	}
	return r, r.writeMetrics()
}

// rescoreTasks evaluates tasks 1..last.Completed of src again, each from
// src's checkpoint after it, and writes this run's checkpoints; r.state
// ends as the last one.
func (r *Run) rescoreTasks(src string, last *State) error {
	reports := slices.Clone(last.Reports)
	for t := range last.Completed {
		st, err := LoadCheckpoint(checkpointDir(src, t+1), r.cfg)
		if err != nil {
			return err
		}
		r.state = st
		start := time.Now()
		if err := r.scoreTask(t, &reports[t]); err != nil {
			return fmt.Errorf("task %d: %w", t+1, err)
		}
		reports[t].EvaluationSeconds = since(start)
		if reports[t].TrainedIn == "" {
			reports[t].TrainedIn = src
		}
		st.Reports = slices.Clone(reports[:t+1])
		if st.heldOut, err = r.heldOutFeatures(st); err != nil {
			return fmt.Errorf("task %d: %w", t+1, err)
		}
		if err := saveCheckpoint(r.dir, st); err != nil {
			return err
		}
		r.log.printf("task %d evaluated again: TAg %s  TAw %s", t+1, percentRow(reports[t].TAg), percentRow(reports[t].TAw))
	}
	return nil
}
