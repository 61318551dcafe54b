package train

import (
	"fmt"
	"maps"
	"math"

	"github.com/bicyc/bicyc/gauss"
)

// OracleClass compares one old class's stored prototype with its oracle
// statistics: the mean and covariance of the class's training images under
// the run's final backbone, estimated as a new class's are (docs/method.md,
// Stage II step 3).
type OracleClass struct {
	ID, Task int // Task numbered from 1
	// MeanShift is ||mu_stored - mu_oracle||_2 and Spread sqrt(tr Sigma_oracle),
	// the root mean squared distance of the class's features from their
	// mean: MeanShift/Spread below 1 is a shift smaller than a typical
	// feature's distance from its own class mean.
	MeanShift, Spread float64
}

// Relative is MeanShift / Spread.
func (o OracleClass) Relative() float64 { return o.MeanShift / o.Spread }

// OraclePrototypes is a diagnostic of the oracle gap, never a method: it
// reads the training images of every class learned before the last
// completed task (which a class-incremental method may not keep) and
// returns, per such class, its oracle Gaussian under the current backbone,
// together with the comparison to the stored prototype. Nothing is stored.
func (r *Run) OraclePrototypes() (map[int]gauss.Gaussian, []OracleClass, error) {
	if r.state.Completed < 2 {
		return nil, nil, fmt.Errorf("%s: the oracle gap needs at least 2 completed tasks, have %d", r.dir, r.state.Completed)
	}
	s := r.cfg.Model.FeatureDim
	flips := r.cfg.Data.HorizontalFlip
	oracle := map[int]gauss.Gaussian{}
	var report []OracleClass
	// Every old class's images in one pass over the labels, one group per
	// class in task order.
	var groups [][]int
	for u := 0; u < r.state.Completed-1; u++ {
		for _, c := range r.stream.Tasks[u] {
			groups = append(groups, []int{c})
		}
	}
	subsets := r.train.Subsets(groups)
	next := 0
	for u := 0; u < r.state.Completed-1; u++ {
		for _, c := range r.stream.Tasks[u] {
			idx, _ := r.splitSubset(subsets[next])
			next++
			z, err := features(r.state.Backbone, r.train, idx, r.prep, r.cfg.Train.EvalBatch, flips)
			if err != nil {
				return nil, nil, fmt.Errorf("oracle: class %d: %w", c, err)
			}
			g, err := classStatistics(z, len(idx)*(1+btoi(flips)), s, 1)
			if err != nil {
				return nil, nil, fmt.Errorf("oracle: class %d: %w", c, err)
			}
			oracle[c] = g
			stored := r.state.Prototypes[c]
			var shift, trace float64
			for i := range s {
				d := stored.Mean[i] - g.Mean[i]
				shift += d * d
				trace += g.Cov.At(i, i)
			}
			report = append(report, OracleClass{ID: c, Task: u + 1, MeanShift: math.Sqrt(shift), Spread: math.Sqrt(trace)})
		}
	}
	return oracle, report, nil
}

// WithOracle returns the run's stored prototypes with, for every class in
// oracle, the mean replaced by the oracle mean and, when covariances, the
// covariance by the oracle covariance.
func (r *Run) WithOracle(oracle map[int]gauss.Gaussian, covariances bool) map[int]gauss.Gaussian {
	out := maps.Clone(r.state.Prototypes)
	for c, g := range oracle {
		p := out[c]
		p.Mean = g.Mean
		if covariances {
			p.Cov = g.Cov
		}
		out[c] = p
	}
	return out
}

// EvaluatePrototypes is EvaluateSplit with protos in place of the stored
// prototypes (for diagnostics such as WithOracle); the run's state is left
// as it was.
func (r *Run) EvaluatePrototypes(opts gauss.ClassifierOptions, split Split, protos map[int]gauss.Gaussian) (Evaluation, error) {
	saved := r.state.Prototypes
	r.state.Prototypes = protos
	defer func() { r.state.Prototypes = saved }()
	return r.EvaluateSplit(opts, split)
}

// TaskConfusion counts the task-agnostic errors of an evaluation by where
// they go: to a class of the image's own task, of an older task or of a
// newer one.
type TaskConfusion struct {
	Images, Errors, SameTask, ToOlder, ToNewer int
}

// CrossTask is the share of errors that go to another task's class.
func (t TaskConfusion) CrossTask() float64 {
	return float64(t.ToOlder+t.ToNewer) / float64(max(t.Errors, 1))
}

// Confusion classifies the errors of ev, an evaluation of split.
func (r *Run) Confusion(ev Evaluation, split Split) TaskConfusion {
	ds := r.test
	if split == SplitVal {
		ds = r.train
	}
	var tc TaskConfusion
	for i, j := range ev.TestIndices {
		want, got := ds.Labels[j], ev.Predictions[i]
		tc.Images++
		if want == got {
			continue
		}
		tc.Errors++
		switch tw, tg := r.stream.TaskOf(want), r.stream.TaskOf(got); {
		case tg == tw:
			tc.SameTask++
		case tg < tw:
			tc.ToOlder++
		default:
			tc.ToNewer++
		}
	}
	return tc
}
