package train

import (
	"fmt"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/models"
)

// classifier builds the task-agnostic Bayes classifier over the seen
// classes, in the order of seen, with priors proportional to each class's
// training-image count (used only by the full-Gaussian score).
func (r *Run) classifier(seen []int) (*gauss.Classifier, error) {
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
	return gauss.NewClassifier(protos, priors, r.classifierOptions())
}

func (r *Run) classifierOptions() gauss.ClassifierOptions {
	c := r.cfg.Classifier
	return gauss.ClassifierOptions{Shrink: c.Shrink, Normalize: c.Normalize, FullGaussian: c.FullGaussian}
}

// Evaluation is the outcome of evaluating after one task.
type Evaluation struct {
	TAg, TAw []float64 // accuracy on each seen task's test set
	// TestIndices are the test images evaluated (indices into the test
	// set), and Predictions the class id the task-agnostic classifier gave
	// each: what an exported model must reproduce.
	TestIndices, Predictions []int
}

// evaluate classifies the test images of tasks 0..t with the current
// backbone and prototypes: over all seen classes (task-agnostic, TAg) and
// over the classes of each image's own task (task-aware, TAw).
func (r *Run) evaluate(b *models.Backbone, t int) (Evaluation, error) {
	var seen []int
	for u := 0; u <= t; u++ {
		seen = append(seen, r.stream.Tasks[u]...)
	}
	clf, err := r.classifier(seen)
	if err != nil {
		return Evaluation{}, err
	}
	pos := map[int]int{}
	for i, c := range seen {
		pos[c] = i
	}
	ev := Evaluation{TAg: make([]float64, t+1), TAw: make([]float64, t+1)}
	for u := 0; u <= t; u++ {
		idx := r.testIndices(r.stream.Tasks[u])
		z, err := features(b, r.test, idx, r.prep, r.cfg.Train.EvalBatch, false)
		if err != nil {
			return Evaluation{}, fmt.Errorf("evaluate task %d: %w", u+1, err)
		}
		allowed := make([]int, len(r.stream.Tasks[u]))
		for i, c := range r.stream.Tasks[u] {
			allowed[i] = pos[c]
		}
		tag := clf.Predict(z, len(idx), nil)
		taw := clf.Predict(z, len(idx), allowed)
		var okAg, okAw int
		for i, j := range idx {
			want := r.test.Labels[j]
			if seen[tag[i]] == want {
				okAg++
			}
			if seen[taw[i]] == want {
				okAw++
			}
			ev.Predictions = append(ev.Predictions, seen[tag[i]])
		}
		ev.TestIndices = append(ev.TestIndices, idx...)
		ev.TAg[u] = float64(okAg) / float64(len(idx))
		ev.TAw[u] = float64(okAw) / float64(len(idx))
	}
	return ev, nil
}

// testIndices returns the test images of the given classes, at most
// data.test_per_class per class, in dataset order.
func (r *Run) testIndices(classes []int) []int {
	return limitPerClass(r.test, r.test.Subset(classes), r.cfg.Data.TestPerClass)
}

// trainIndices returns the training images of the given classes, at most
// data.train_per_class per class, in dataset order.
func (r *Run) trainIndices(classes []int) []int {
	return limitPerClass(r.train, r.train.Subset(classes), r.cfg.Data.TrainPerClass)
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
func (r *Run) Evaluate(opts config.Classifier) (Evaluation, error) {
	if r.state.Completed == 0 {
		return Evaluation{}, fmt.Errorf("%s: no completed task to evaluate", r.dir)
	}
	saved := r.cfg.Classifier
	r.cfg.Classifier = opts
	defer func() { r.cfg.Classifier = saved }()
	return r.evaluate(r.state.Backbone, r.state.Completed-1)
}

// TestSet is the run's test data (all tasks, learned ones included).
func (r *Run) TestSet() *data.Dataset { return r.test }
