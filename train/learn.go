package train

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/names"
	"github.com/bicyc/bicyc/rundir"
)

// LearnKeys are the configuration keys Learn may change for the new task:
// config.LaterTaskKeys and the optimisation settings of the new task's own
// training. The others (data, model, stream, seed, classifier, ...) shaped
// the tasks already learned.
var LearnKeys = append(slices.Clone(config.LaterTaskKeys),
	"train.batch_size", "train.momentum", "train.weight_decay", "train.milestones", "train.milestone_rounding",
	"train.lr_decay", "train.clip_norm", "train.eval_batch", "data.skip_unreadable",
	"loss.anti_collapse", "loss.alpha", "loss.beta", "loss.ac_shrink", "loss.ac_jitter")

// LearnOptions change how Learn teaches the new task.
type LearnOptions struct {
	// Config, when set, is the configuration of the new task: it may
	// differ from the run's only in LearnKeys (epochs, learning rate, step
	// floors, losses, adapter.*, method, ...); other differences are errors
	// wrapping ErrForkMismatch that name the keys. nil keeps the run's.
	Config *config.Config
	// AllowDuplicateNames accepts a new class named like a class the run
	// already has (otherwise an error: two classes of one name cannot be
	// told apart in a prediction).
	AllowDuplicateNames bool
}

// MinLearnImages is the fewest training images per class Learn accepts: a
// covariance needs two; LearnWarnImages is the count below which it warns
// that the prototype leans mostly on the classifier's shrinkage.
const (
	MinLearnImages  = 2
	LearnWarnImages = 10
)

// Learn adds one task of new classes to a finished run and trains it: the
// exemplar-free promise, usable after the fact. The new classes come from
// image folders (one sub-folder per class, see data.LoadPhotoFolders),
// converted with the run's preprocessing; they get the class ids after the
// last one of the run. Training sees only the new images; old classes live
// on as their transported prototypes. Evaluation covers every task's test
// set, so the original test data must still be readable.
func (r *Run) Learn(ctx context.Context, trainDir, testDir string, opts LearnOptions) error {
	if r.state.Completed != len(r.stream.Tasks) {
		return fmt.Errorf("%s: the run has finished %d of %d tasks (a train or learn was interrupted): resume it (train.Resume), which also exports it, before learning a new task",
			r.dir, r.state.Completed, len(r.stream.Tasks))
	}
	if err := r.refuseBehindModel(trainDir); err != nil {
		return err
	}
	task := rundir.LearnedTask{Task: len(r.stream.Tasks), TrainDir: trainDir, TestDir: testDir}
	if opts.Config != nil {
		if keys := config.DifferencesOutside(r.cfg, *opts.Config, LearnKeys); len(keys) > 0 {
			return fmt.Errorf("%s: learn: %w: %s can only change when the run starts", r.dir, ErrForkMismatch, strings.Join(keys, ", "))
		}
		if err := opts.Config.Validate(); err != nil {
			return fmt.Errorf("learn: invalid configuration:\n%w", err)
		}
		if len(config.Diff(r.cfg, *opts.Config)) > 0 {
			c := *opts.Config
			task.Config = &c
		}
	}
	train, test, err := r.loadLearned(task)
	if err != nil {
		return err
	}
	for _, ds := range []*data.Dataset{train, test} {
		for _, skipped := range ds.Skipped {
			r.log.printf("skipped %s", skipped)
		}
	}
	if err := r.checkLearnData(train, opts.AllowDuplicateNames); err != nil {
		return err
	}
	base := len(r.train.ClassNames)
	for i := range train.ClassNames {
		task.Classes = append(task.Classes, base+i)
	}
	if err := r.appendLearned(task, train, test); err != nil {
		return err
	}
	r.learned = append(r.learned, task)
	// The stream is saved before training: if learning is interrupted, the
	// run resumes with the new task, like any other unfinished task.
	if err := durable.WriteJSON(filepath.Join(r.dir, rundir.StreamFile), r.streamRecord()); err != nil {
		return err
	}
	r.log.printf("learning task %d: %d new classes %v from %s", task.Task+1, len(task.Classes), train.ClassNames, trainDir)
	return r.Execute(ctx)
}

// ModelBehind reports whether the run's model directory (ModelDir) holds
// fewer tasks than its last checkpoint: a train or learn killed between the
// two leaves it so. nil means up to date, or no model directory.
func (r *Run) ModelBehind() (*rundir.Behind, error) {
	return rundir.Check(r.dir, ModelDir(r.cfg, r.dir))
}

// refuseBehindModel refuses to learn on a run that exports
// (export.enabled) whose model directory lags its last checkpoint, naming
// the repair (a run that does not export is only warned about): the new task would be learned
// and exported on top of a task that was never exported, and learning
// again the folders of a task already learned would only fail on its
// class names.
func (r *Run) refuseBehindModel(trainDir string) error {
	behind, err := r.ModelBehind()
	if err != nil || behind == nil {
		return err
	}
	if !r.cfg.Export.Enabled {
		// The run does not keep its model current: say so, go on.
		r.log.printf("warning: %s", behind)
		return nil
	}
	if n := len(r.learned); n > 0 && sameFolder(r.learned[n-1].TrainDir, trainDir) {
		last := r.learned[n-1]
		return fmt.Errorf("%s: task %d already learned the classes of %s (its checkpoint is written), but its export was interrupted: %s",
			r.dir, last.Task+1, trainDir, behind)
	}
	return fmt.Errorf("%s: learn first needs the model brought up to date: %s", r.dir, behind)
}

// sameFolder reports whether a and b name the same folder.
func sameFolder(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// loadLearned reads a learned task's image folders with the run's
// preprocessing and the task's own data.skip_unreadable.
func (r *Run) loadLearned(task rundir.LearnedTask) (train, test *data.Dataset, err error) {
	cfg := r.cfg
	if task.Config != nil {
		cfg = *task.Config
	}
	o := data.FolderOptions{LoadSide: loadSide(r.cfg, r.prep), SkipUnreadable: cfg.Data.SkipUnreadable}
	return data.LoadFolders(task.TrainDir, task.TestDir, r.prep, o)
}

// checkLearnData refuses new classes with fewer than MinLearnImages
// training images or (unless allowed) a name the run already has, and
// warns about classes under LearnWarnImages.
func (r *Run) checkLearnData(train *data.Dataset, allowDuplicates bool) error {
	counts := train.ClassCounts()
	var errs []error
	existing := r.train.ClassNames
	if allowDuplicates {
		existing = nil // the new classes are still checked among themselves
	}
	if err := names.CheckNew(existing, train.ClassNames); err != nil {
		hint := ""
		if errors.Is(err, names.ErrLookalike) && !allowDuplicates {
			hint = " (LearnOptions.AllowDuplicateNames learns a class named like one the run has)"
		}
		errs = append(errs, fmt.Errorf("%s: %w%s", train.Source, err, hint))
	}
	for i, name := range train.ClassNames {
		switch {
		case counts[i] < MinLearnImages:
			errs = append(errs, fmt.Errorf("%s: class %q has %d training images, need at least %d", train.Source, name, counts[i], MinLearnImages))
		case counts[i] < LearnWarnImages:
			r.log.printf("warning: %s: class %q has only %d training images; below %d its prototype leans mostly on the classifier's shrinkage", train.Source, name, counts[i], LearnWarnImages)
		}
	}
	return errors.Join(errs...)
}

// appendLearned adds a learned task's images (labels offset to its class
// ids) to the run's datasets and its classes to the stream.
func (r *Run) appendLearned(task rundir.LearnedTask, train, test *data.Dataset) error {
	if len(train.ClassNames) != len(task.Classes) {
		return fmt.Errorf("%s: %d class folders, the run recorded %d classes for task %d", task.TrainDir, len(train.ClassNames), len(task.Classes), task.Task+1)
	}
	base := task.Classes[0]
	var err error
	if r.train, err = concat(r.train, train, base); err != nil {
		return err
	}
	if r.test, err = concat(r.test, test, base); err != nil {
		return err
	}
	if task.Task == len(r.stream.Tasks) {
		r.stream.Tasks = append(r.stream.Tasks, task.Classes)
		r.stream.Order = append(r.stream.Order, task.Classes...)
	}
	return nil
}

// concat returns a dataset with the images of a followed by those of b,
// whose labels are shifted by offset; a's class names are extended by b's.
// The result appends to a's slices, so it may share their arrays: a must
// not be grown after. That keeps Resume, which joins every learned task in
// turn, linear in the images (a fresh copy of all of them per learned task
// took 21 s and 111 GB of allocations for 500 tasks of 500 small images).
func concat(a, b *data.Dataset, offset int) (*data.Dataset, error) {
	if a.Channels != b.Channels || a.Height != b.Height || a.Width != b.Width {
		return nil, fmt.Errorf("%s: images are %dx%dx%d, the run's are %dx%dx%d", b.Source, b.Channels, b.Height, b.Width, a.Channels, a.Height, a.Width)
	}
	if offset != len(a.ClassNames) {
		return nil, fmt.Errorf("%s: new class ids start at %d, the run has %d classes", b.Source, offset, len(a.ClassNames))
	}
	photos, err := data.ConcatPhotos(a.Photos, b.Photos)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Source, err)
	}
	out := &data.Dataset{Name: a.Name, Channels: a.Channels, Height: a.Height, Width: a.Width, Source: a.Source + " + " + b.Source,
		Photos:     photos,
		Pixels:     append(a.Pixels, b.Pixels...),
		Labels:     a.Labels,
		ClassNames: append(a.ClassNames, b.ClassNames...)}
	for _, l := range b.Labels {
		out.Labels = append(out.Labels, l+offset)
	}
	return out, nil
}
