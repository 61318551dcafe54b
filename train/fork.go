package train

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/rundir"
)

// ErrForkMismatch is wrapped when a fork's configuration differs from its
// source run's in a key that task 1 depends on.
var ErrForkMismatch = errors.New("configuration changes task 1")

// Fork creates the run directory dir for cfg, starting after task 1 from
// the run in src instead of training task 1 again: it takes src's task
// stream and its checkpoint after task 1 (metrics of task 1 included).
// cfg may differ from src's configuration only in config.LaterTaskKeys and
// config.ClassifierKeys; any other difference is an error wrapping ErrForkMismatch
// that names the keys. When the classifier differs, task 1's accuracies
// (test and validation) are computed again with cfg's classifier.
// Because every random source is derived from the seed and the task, the
// forked run then trains exactly what a run of cfg from scratch would
// (tested); it only saves the time of task 1, which with rotation is the
// longest task. Sweeps fork every run of a seed from the first one.
//
// src may still be training as long as its task-1 checkpoint is complete;
// nothing in src is modified.
func Fork(src string, cfg config.Config, dir string, opts Options) (*Run, error) {
	srcCfg, rec, err := readSource(src, cfg, config.FirstTaskDifferences)
	if err != nil {
		return nil, fmt.Errorf("fork from %s: %w", src, err)
	}
	ckpt := checkpointDir(src, 1)
	st, err := LoadCheckpoint(ckpt, cfg)
	if err != nil {
		return nil, fmt.Errorf("fork from %s: %w", ckpt, err)
	}
	if st.Completed != 1 {
		return nil, fmt.Errorf("fork from %s: checkpoint records %d completed tasks, want 1", ckpt, st.Completed)
	}
	r, err := derivedRun(cfg, dir, opts, rec)
	if err != nil {
		return nil, err
	}
	if len(st.Reports) == 1 && st.Reports[0].TrainedIn == "" {
		st.Reports[0].TrainedIn = src
	}
	r.state = st
	if !reflect.DeepEqual(srcCfg.Classifier, cfg.Classifier) {
		r.log.printf("task 1 evaluated again: the classifier differs from %s's", src)
		if err := r.evaluateTask(0, nil, &st.Reports[0]); err != nil {
			return r.fail(fmt.Errorf("fork from %s: %w", src, err))
		}
	}
	// Same order as New, checkpoint first: config.yaml marks a run that can
	// be resumed, and a fork killed before it is simply started again.
	if err := durable.WriteJSON(filepath.Join(dir, rundir.StreamFile), r.streamRecord()); err != nil {
		return r.fail(err)
	}
	if st.heldOut, err = r.heldOutFeatures(st); err != nil {
		return r.fail(err)
	}
	if err := saveCheckpoint(dir, st); err != nil {
		return r.fail(err)
	}
	if err := writeConfig(filepath.Join(dir, rundir.ConfigFile), cfg); err != nil {
		return r.fail(err)
	}
	r.log.printf("run %s: %s on %s, %d tasks, seed %d, task 1 taken from %s", dir, cfg.Method, cfg.Data.Kind, len(r.stream.Tasks), cfg.Seed, src)
	r.log.printf("task stream:\n%s", r.stream.Format(r.train.ClassNames))
	return r, nil
}

// readSource validates cfg and reads the configuration and task stream of
// the run in src, which a run of cfg starts from: differences lists the keys
// in which the two may not differ, an error wrapping ErrForkMismatch.
func readSource(src string, cfg config.Config, differences func(a, b config.Config) []string) (config.Config, rundir.Stream, error) {
	var rec rundir.Stream
	if err := cfg.Validate(); err != nil {
		return config.Config{}, rec, err
	}
	srcCfg, err := config.ReadRun(filepath.Join(src, rundir.ConfigFile))
	if err != nil {
		return config.Config{}, rec, err
	}
	if keys := differences(srcCfg, cfg); len(keys) > 0 {
		return config.Config{}, rec, fmt.Errorf("%w: %s differ", ErrForkMismatch, strings.Join(keys, ", "))
	}
	rec, err = rundir.ReadStream(src)
	return srcCfg, rec, err
}

// derivedRun creates the run directory dir for cfg with the task stream rec
// of the run it starts from.
func derivedRun(cfg config.Config, dir string, opts Options, rec rundir.Stream) (*Run, error) {
	r, err := prepareRun(cfg, dir, opts)
	if err != nil {
		return nil, err
	}
	if err := r.createDir(opts); err != nil {
		return nil, err
	}
	r.stream = data.TaskStream{Order: rec.Order, Tasks: rec.Tasks}
	return r, nil
}

// HasFirstTask reports whether the run in dir has a complete checkpoint
// after task 1, the one Fork starts from.
func HasFirstTask(dir string) bool {
	_, err := os.Stat(filepath.Join(checkpointDir(dir, 1), "state.json"))
	return err == nil
}
