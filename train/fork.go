package train

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/durable"
)

// LaterTaskKeys are the configuration keys that play no part in task 1.
// Task 1 trains the backbone and a head on CE, rotation and L_ac alone,
// evaluates and stores the first prototypes; the method, the distillation
// losses, the mappers, Stage II, transport and the later tasks' epochs and
// learning rate only act from task 2 on. Runs whose configurations differ
// in these keys alone therefore have the same first task (Fork).
var LaterTaskKeys = []string{
	"method", "run_dir", "run_name", "threads", "train.device",
	"model.mapper", "model.hidden_mult",
	"train.epochs", "train.lr", "train.min_steps", "train.freeze_bn_stats",
	"loss.bi", "loss.cyc", "loss.pair", "loss.lambda_bi", "loss.lambda_cyc", "loss.lambda_pair",
	"loss.pair_rows", "loss.kd_weight", "loss.cycle_detach_inner",
	"loss.rehearsal.enabled", "loss.rehearsal.lambda", "loss.rehearsal.per_class", "loss.rehearsal.backbone",
	"adapter.epochs", "adapter.lr", "adapter.transport_samples", "adapter.alpha", "adapter.min_steps", "adapter.select", "adapter.ensemble",
	"classifier.age_shrink", "classifier.age_bias",
	"anchors.per_class", "anchors.steps", "anchors.step", "anchors.start", "anchors.mean_shift",
	"export.enabled", "export.dir",
	"model.linear_bias", "loss.pair_sampling", "adapter.adagauss_epochs", "adapter.milestones",
	"quick_profile.epochs", "quick_profile.transport_samples", "quick_profile.adapter_epochs",
}

// ClassifierKeys are the classifier.* keys (every key of gauss.ClassifierOptions):
// they act only when a task is evaluated, never on what it trains. Runs that
// differ in them (and in LaterTaskKeys) share their first task; Fork
// evaluates it again with the new run's classifier.
var ClassifierKeys = classifierKeys()

func classifierKeys() []string {
	var keys []string
	for _, k := range config.Keys() {
		if strings.HasPrefix(k.Name, "classifier.") {
			keys = append(keys, k.Name)
		}
	}
	return keys
}

// ErrForkMismatch is wrapped when a fork's configuration differs from its
// source run's in a key that task 1 depends on.
var ErrForkMismatch = errors.New("configuration changes task 1")

// FirstTaskDifferences lists the keys outside LaterTaskKeys and
// ClassifierKeys in which a and b differ: the reasons two runs cannot share
// their first task.
func FirstTaskDifferences(a, b config.Config) []string {
	return differencesOutside(a, b, slices.Concat(LaterTaskKeys, ClassifierKeys))
}

// differencesOutside lists the keys not in allowed in which a and b differ.
func differencesOutside(a, b config.Config, allowed []string) []string {
	var keys []string
	for _, c := range config.Diff(a, b) {
		if !slices.Contains(allowed, c.Key) {
			keys = append(keys, c.Key)
		}
	}
	return keys
}

// Fork creates the run directory dir for cfg, starting after task 1 from
// the run in src instead of training task 1 again: it takes src's task
// stream and its checkpoint after task 1 (metrics of task 1 included).
// cfg may differ from src's configuration only in LaterTaskKeys and
// ClassifierKeys; any other difference is an error wrapping ErrForkMismatch
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
	srcCfg, rec, err := readSource(src, cfg, FirstTaskDifferences)
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
	if err := durable.WriteJSON(filepath.Join(dir, "stream.json"), r.streamRecord()); err != nil {
		return r.fail(err)
	}
	if st.heldOut, err = r.heldOutFeatures(st); err != nil {
		return r.fail(err)
	}
	if err := saveCheckpoint(dir, st); err != nil {
		return r.fail(err)
	}
	if err := writeYAML(filepath.Join(dir, "config.yaml"), cfg); err != nil {
		return r.fail(err)
	}
	r.log.printf("run %s: %s on %s, %d tasks, seed %d, task 1 taken from %s", dir, cfg.Method, cfg.Data.Kind, len(r.stream.Tasks), cfg.Seed, src)
	r.log.printf("task stream:\n%s", r.stream.Format(r.train.ClassNames))
	return r, nil
}

// readSource validates cfg and reads the configuration and task stream of
// the run in src, which a run of cfg starts from: differences lists the keys
// in which the two may not differ, an error wrapping ErrForkMismatch.
func readSource(src string, cfg config.Config, differences func(a, b config.Config) []string) (config.Config, streamRecord, error) {
	var rec streamRecord
	if err := cfg.Validate(); err != nil {
		return config.Config{}, rec, err
	}
	srcCfg, err := config.ReadRun(filepath.Join(src, "config.yaml"))
	if err != nil {
		return config.Config{}, rec, err
	}
	if keys := differences(srcCfg, cfg); len(keys) > 0 {
		return config.Config{}, rec, fmt.Errorf("%w: %s differ", ErrForkMismatch, strings.Join(keys, ", "))
	}
	return srcCfg, rec, readJSON(filepath.Join(src, "stream.json"), &rec)
}

// derivedRun creates the run directory dir for cfg with the task stream rec
// of the run it starts from.
func derivedRun(cfg config.Config, dir string, opts Options, rec streamRecord) (*Run, error) {
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
