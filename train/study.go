package train

import (
	"fmt"
	"slices"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/gauss"
)

// The methods below serve studies of the classifier on a finished run
// (bench/coldstart): they give a checkpoint's prototypes and the features of
// a split under its backbone, so that classifiers other than
// gauss.Classifier can be scored on exactly the images bicyc eval scores.

// LoadTask replaces the run's state by its checkpoint after task t
// (numbered from 1), as Rescore reads it.
func (r *Run) LoadTask(t int) error {
	if t < 1 || t > len(r.stream.Tasks) {
		return fmt.Errorf("%s: task %d: want 1..%d", r.dir, t, len(r.stream.Tasks))
	}
	st, err := LoadCheckpoint(checkpointDir(r.dir, t), r.cfg)
	if err != nil {
		return fmt.Errorf("%s: task %d: %w", r.dir, t, err)
	}
	r.state = st
	return nil
}

// SplitFeatures returns the features under the current backbone of the
// split's images of tasks 1..t (t numbered from 1), task after task as
// EvaluateSplit reads them, with their class ids; with flipped, the rows of
// the horizontally mirrored images follow those of the images, in the same
// order (the labels are those of the first half).
func (r *Run) SplitFeatures(split Split, t int, flipped bool) ([]float32, []int, error) {
	ds, indices := r.test, r.testSubset
	if split == SplitVal {
		ds, indices = r.train, r.valSubset
	}
	var idx []int
	for _, sub := range ds.Subsets(r.stream.Tasks[:t]) {
		idx = append(idx, indices(sub)...)
	}
	z, err := features(r.state.Backbone, ds, idx, r.prep, r.cfg.Train.EvalBatch, flipped)
	if err != nil {
		return nil, nil, err
	}
	labels := make([]int, len(idx))
	for i, j := range idx {
		labels[i] = ds.Labels[j]
	}
	return z, labels, nil
}

// OracleTrainingFeatures is a diagnostic, never a method: the features under
// the current backbone of the images trained on of every class of tasks
// 1..t, old tasks included (which an exemplar-free method may not keep),
// with their class ids.
func (r *Run) OracleTrainingFeatures(t int) ([]float32, []int, error) {
	var idx []int
	for _, sub := range r.train.Subsets(r.stream.Tasks[:t]) {
		tr, _ := r.splitSubset(sub)
		idx = append(idx, tr...)
	}
	z, err := features(r.state.Backbone, r.train, idx, r.prep, r.cfg.Train.EvalBatch, false)
	if err != nil {
		return nil, nil, err
	}
	labels := make([]int, len(idx))
	for i, j := range idx {
		labels[i] = r.train.Labels[j]
	}
	return z, labels, nil
}

// SeenPrototypes returns the prototypes of the classes of tasks 1..t of the
// current state in score order (task by task), with each class's id and age
// (the tasks learned after its own, up to t).
func (r *Run) SeenPrototypes(t int) (protos []gauss.Gaussian, ids, ages []int, err error) {
	seen := slices.Concat(r.stream.Tasks[:t]...)
	for _, c := range classEntries(r.stream.Tasks, seen, t-1) {
		p, ok := r.state.Prototypes[c.ID]
		if !ok {
			return nil, nil, nil, fmt.Errorf("%s: no prototype for class %d", r.dir, c.ID)
		}
		protos = append(protos, p)
		ids = append(ids, c.ID)
		ages = append(ages, c.Age)
	}
	return protos, ids, ages, nil
}

// ValidationImages returns the training dataset and its held-out images
// (the validation split, never trained on) of every class of tasks 1..t,
// task after task: the images the exported model's calibration reads.
func (r *Run) ValidationImages(t int) (*data.Dataset, []int) {
	var idx []int
	for _, sub := range r.train.Subsets(r.stream.Tasks[:t]) {
		idx = append(idx, r.valSubset(sub)...)
	}
	return r.train, idx
}
