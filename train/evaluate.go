package train

import (
	"errors"
	"fmt"
	"slices"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/models"
)

// classifier builds the task-agnostic Bayes classifier over the seen
// classes after task t (numbered from 0), in the order of seen, with priors
// proportional to each class's training-image count (used only by the
// full-Gaussian score).
func (r *Run) classifier(seen []int, t int) (*gauss.Classifier, error) {
	protos := make([]gauss.Gaussian, len(seen))
	priors := make([]float64, len(seen))
	for i, c := range seen {
		p, ok := r.state.Prototypes[c]
		if !ok {
			return nil, fmt.Errorf("no prototype for class %d", c)
		}
		protos[i] = p
		priors[i] = float64(r.state.ClassCounts[c])
	}
	opts := r.cfg.Classifier.WithAges(bundle.Ages(classEntries(r.stream.Tasks, seen, t)))
	return gauss.NewClassifier(protos, priors, opts)
}

// Evaluation is the outcome of evaluating after one task.
type Evaluation struct {
	TAg, TAw []float64 // accuracy on each seen task's test set
	// TestIndices are the test images evaluated (indices into the test
	// set), and Predictions the class id the task-agnostic classifier gave
	// each: what an exported model must reproduce.
	TestIndices, Predictions []int
}

// Split names the images an evaluation reads.
type Split string

const (
	// SplitTest is the test set: read once, for the numbers a run reports.
	SplitTest Split = "test"
	// SplitVal is the validation split of the training images
	// (data.val_per_class): never trained on, for choosing settings.
	SplitVal Split = "val"
)

// evaluate classifies the test images of tasks 0..t with the current
// backbone and prototypes: over all seen classes (task-agnostic, TAg) and
// over the classes of each image's own task (task-aware, TAw).
func (r *Run) evaluate(b *models.Backbone, t int) (Evaluation, error) {
	return r.evaluateSplit(b, t, SplitTest)
}

// evaluateSplit is evaluate on the images of split. A task without images
// in the split gives an error wrapping ErrEmptySplit.
func (r *Run) evaluateSplit(b *models.Backbone, t int, split Split) (Evaluation, error) {
	ds, indices := r.test, r.testSubset
	if split == SplitVal {
		ds, indices = r.train, r.valSubset
	}
	// Every task's images in one pass over the labels.
	subsets := ds.Subsets(r.stream.Tasks[:t+1])
	var seen []int
	for u := 0; u <= t; u++ {
		seen = append(seen, r.stream.Tasks[u]...)
	}
	clf, err := r.classifier(seen, t)
	if err != nil {
		return Evaluation{}, err
	}
	pos := map[int]int{}
	for i, c := range seen {
		pos[c] = i
	}
	ev := Evaluation{TAg: make([]float64, t+1), TAw: make([]float64, t+1)}
	k := clf.Classes()
	for u := 0; u <= t; {
		// Consecutive tasks are scored together, evalGroupRows images or
		// more at a time (see there).
		first, rows := u, 0
		var group [][]int
		for ; u <= t && rows < evalGroupRows; u++ {
			idx := indices(subsets[u])
			if len(idx) == 0 {
				return Evaluation{}, fmt.Errorf("task %d: %w %s", u+1, ErrEmptySplit, split)
			}
			group = append(group, idx)
			rows += len(idx)
		}
		scores, err := r.scores(clf, b, ds, slices.Concat(group...), r.cfg.Classifier.TestFlip)
		if err != nil {
			return Evaluation{}, fmt.Errorf("evaluate tasks %d-%d: %w", first+1, u, err)
		}
		for g, idx := range group {
			v := first + g
			allowed := make([]int, len(r.stream.Tasks[v]))
			for i, c := range r.stream.Tasks[v] {
				allowed[i] = pos[c]
			}
			own := scores[:len(idx)*k]
			scores = scores[len(idx)*k:]
			tag := clf.PredictScores(own, len(idx), nil)
			taw := clf.PredictScores(own, len(idx), allowed)
			var okAg, okAw int
			for i, j := range idx {
				want := ds.Labels[j]
				if seen[tag[i]] == want {
					okAg++
				}
				if seen[taw[i]] == want {
					okAw++
				}
				ev.Predictions = append(ev.Predictions, seen[tag[i]])
			}
			ev.TestIndices = append(ev.TestIndices, idx...)
			ev.TAg[v] = float64(okAg) / float64(len(idx))
			ev.TAw[v] = float64(okAw) / float64(len(idx))
		}
	}
	return ev, nil
}

// evalGroupRows is the fewest images evaluation scores at a time, taking
// consecutive tasks together: a run of thousands of classes in tasks of ten
// has hundreds of tasks of a few dozen test images each, and scoring them
// task by task built an extractor graph per task and read the classifier's
// whole table (K x 2145 float64 values at S = 64) once per few dozen rows,
// on one core. The scores of a group take rows x K float32 values.
const evalGroupRows = 1024

// scores returns clf's [len(idx), K] scores of images idx of ds under
// backbone b, as an exported model computes them: with testFlip
// (classifier.test_flip) the mean of each image's and its mirror's.
func (r *Run) scores(clf *gauss.Classifier, b *models.Backbone, ds *data.Dataset, idx []int, testFlip bool) ([]float32, error) {
	z, err := features(b, ds, idx, r.prep, r.cfg.Train.EvalBatch, testFlip)
	if err != nil {
		return nil, err
	}
	n, k := len(idx), clf.Classes()
	if !testFlip {
		return clf.Scores(z, n), nil
	}
	s := clf.Scores(z, 2*n)
	return gauss.MeanScores(s[:n*k], s[n*k:]), nil
}

// testIndices returns the test images of the given classes, at most
// data.test_per_class per class, in dataset order.
func (r *Run) testIndices(classes []int) []int {
	return r.testSubset(r.test.Subset(classes))
}

// testSubset is testIndices of the test images subset (Dataset.Subset of
// the classes).
func (r *Run) testSubset(subset []int) []int {
	return limitPerClass(r.test, subset, r.cfg.Data.TestPerClass)
}

// trainIndices returns the training images of the given classes that are
// trained on: at most data.train_per_class per class, less the validation
// split, in dataset order.
func (r *Run) trainIndices(classes []int) []int {
	train, _ := r.splitTraining(classes)
	return train
}

// valIndices returns the validation images of the given classes, in
// dataset order (data.val_per_class).
func (r *Run) valIndices(classes []int) []int {
	return r.valSubset(r.train.Subset(classes))
}

// valSubset is valIndices of the training images subset (Dataset.Subset
// of the classes).
func (r *Run) valSubset(subset []int) []int {
	_, val := r.splitSubset(subset)
	return val
}

// ErrEmptySplit is wrapped when a split has no image of a task (no
// validation split configured, or classes too small for one).
var ErrEmptySplit = errors.New("no images in split")

// splitTraining divides the training images of the given classes (at most
// data.train_per_class per class, the first in dataset order) into those
// trained on and the validation split: ValidationCount of each class's
// images, drawn with a random source of the run's seed and the class, so a
// resumed, forked or re-evaluated run holds out the same images.
func (r *Run) splitTraining(classes []int) (train, val []int) {
	return r.splitSubset(r.train.Subset(classes))
}

// splitSubset is splitTraining of the training images subset
// (Dataset.Subset of the classes).
func (r *Run) splitSubset(subset []int) (train, val []int) {
	all := limitPerClass(r.train, subset, r.cfg.Data.TrainPerClass)
	byClass := map[int][]int{}
	for _, i := range all {
		byClass[r.train.Labels[i]] = append(byClass[r.train.Labels[i]], i)
	}
	held := map[int]bool{}
	for c, ids := range byClass {
		k := ValidationCount(r.cfg.Data.ValPerClass, len(ids))
		for _, p := range r.rng(fmt.Sprintf("validation-%d", c), 0).Perm(len(ids))[:k] {
			held[ids[p]] = true
		}
	}
	for _, i := range all {
		if held[i] {
			val = append(val, i)
		} else {
			train = append(train, i)
		}
	}
	return train, val
}

// ValidationCount is the number of a class's n training images that
// data.val_per_class = perClass holds out: 10% rounded down for -1, none
// for 0, else perClass but never more than half of the class.
func ValidationCount(perClass, n int) int {
	switch {
	case perClass < 0:
		return n / 10
	case perClass == 0:
		return 0
	}
	return min(perClass, n/2)
}

// limitPerClass keeps the first limit indices of each class (all when limit is 0).
func limitPerClass(ds *data.Dataset, idx []int, limit int) []int {
	if limit <= 0 {
		return idx
	}
	count := map[int]int{}
	out := idx[:0:0]
	for _, i := range idx {
		if l := ds.Labels[i]; count[l] < limit {
			count[l]++
			out = append(out, i)
		}
	}
	return out
}

// Evaluate classifies the test sets of every completed task with the
// current state and the given classifier options (which need not be the
// ones the run was trained with): the accuracy on each task's test set over
// all seen classes (TAg) and within each task (TAw), and every prediction.
func (r *Run) Evaluate(opts gauss.ClassifierOptions) (Evaluation, error) {
	return r.EvaluateSplit(opts, SplitTest)
}

// EvaluateSplit is Evaluate on the images of split: SplitVal scores
// classifier options on images never trained on, leaving the test set for
// the final reading. Indices and predictions then refer to the training set.
func (r *Run) EvaluateSplit(opts gauss.ClassifierOptions, split Split) (Evaluation, error) {
	if r.state.Completed == 0 {
		return Evaluation{}, fmt.Errorf("%s: no completed task to evaluate", r.dir)
	}
	saved := r.cfg.Classifier
	r.cfg.Classifier = opts
	defer func() { r.cfg.Classifier = saved }()
	return r.evaluateSplit(r.state.Backbone, r.state.Completed-1, split)
}

// TestSet is the run's test data (all tasks, learned ones included).
func (r *Run) TestSet() *data.Dataset { return r.test }
