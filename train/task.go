package train

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/kernels"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/rundir"
)

// learnTask runs Stage I, Stage II and evaluation for task t (0-based) and
// updates the run state.
func (r *Run) learnTask(ctx context.Context, t int) (rundir.TaskReport, error) {
	cfg := r.cfg
	classes := r.stream.Tasks[t]
	idx := r.trainIndices(classes)
	device, _, err := trainingDevice(cfg)
	if err != nil {
		return rundir.TaskReport{}, err
	}
	rep := rundir.TaskReport{Task: t + 1, Classes: classes, Build: trainingBuild(), Kernels: kernels.Current().String(), Device: device}
	r.log.printf("task %d/%d: classes %v, %d training images", t+1, len(r.stream.Tasks), classes, len(idx))

	old := r.state.Backbone
	cur := old
	if t > 0 {
		cur = old.Clone()
	}
	distil := t > 0 && cfg.Method != config.MethodFinetune
	var prev *models.Backbone
	if distil {
		prev = old
	}
	dist, adapt, err := r.newMappers(t, distil)
	if err != nil {
		return rep, err
	}
	start := time.Now()
	losses, imgs, err := r.stage1(ctx, t, cur, prev, dist, adapt, idx)
	if err != nil {
		return rep, err
	}
	rep.Losses = losses
	rep.Stage1Seconds = since(start)
	rep.Stage1ImagesPerS = float64(imgs) / rep.Stage1Seconds

	// Stage II: features of this task's training images (test-time
	// preprocessing, with flipped copies when flips are part of training).
	start = time.Now()
	flips := cfg.Data.HorizontalFlip
	zNew, err := features(cur, r.train, idx, r.prep, cfg.Train.EvalBatch, flips)
	if err != nil {
		return rep, err
	}
	protos := maps.Clone(r.state.Prototypes)
	if distil {
		pair := featurePairs{old: old, cur: cur, idx: idx, zNew: zNew, rows: len(idx) * (1 + btoi(flips)), flips: flips}
		if adapt, err = r.stage2(t, pair, adapt, protos, &rep); err != nil {
			return rep, err
		}
		rep.Stage2Seconds = since(start) - rep.TransportSeconds
	}
	if err := r.newClassStatistics(classes, idx, zNew, flips, protos); err != nil {
		return rep, err
	}
	if cfg.Method != config.MethodFinetune {
		r.state.Adapter = adapt
	}
	r.state.Backbone = cur
	r.state.Prototypes = protos
	return rep, r.evaluateTask(t, old, &rep)
}

// newMappers creates task t's fresh distiller D and (bicyc) adapter A when
// the task distils.
func (r *Run) newMappers(t int, distil bool) (dist, adapt *models.Mapper, err error) {
	if !distil {
		return nil, nil, nil
	}
	m := r.cfg.Model
	if dist, err = models.NewMapper(mapperKind(m), m.FeatureDim, m.HiddenMult, r.rng("distiller", t)); err != nil {
		return nil, nil, err
	}
	if r.cfg.Method == config.MethodBicyc {
		adapt, err = models.NewMapper(mapperKind(m), m.FeatureDim, m.HiddenMult, r.rng("adapter", t))
	}
	return dist, adapt, err
}

// evaluateTask fills rep with the accuracies after task t on the test set
// and the validation split, and the drift diagnostics when eval.drift is on.
func (r *Run) evaluateTask(t int, old *models.Backbone, rep *rundir.TaskReport) error {
	start := time.Now()
	if err := r.scoreTask(t, rep); err != nil {
		return err
	}
	rep.EvaluationSeconds = since(start)
	if r.cfg.Eval.Drift {
		var err error
		if rep.Drift, err = r.drift(t, old, r.state.Backbone); err != nil {
			return err
		}
	}
	r.log.printf("task %d done: TAg %s  TAw %s  (stage I %.0fs at %.0f img/s, stage II %.1fs, transport %.1fs, eval %.1fs)",
		t+1, percentRow(rep.TAg), percentRow(rep.TAw), rep.Stage1Seconds, rep.Stage1ImagesPerS, rep.Stage2Seconds, rep.TransportSeconds, rep.EvaluationSeconds)
	return nil
}

// scoreTask sets rep's accuracies after task t, on the test set and on the
// validation split (none without one), with the current state and
// classifier.
func (r *Run) scoreTask(t int, rep *rundir.TaskReport) error {
	ev, err := r.evaluate(r.state.Backbone, t)
	if err != nil {
		return err
	}
	rep.TAg, rep.TAw = ev.TAg, ev.TAw
	val, err := r.evaluateSplit(r.state.Backbone, t, SplitVal)
	switch {
	case err == nil:
		rep.ValTAg = val.TAg
	case !errors.Is(err, ErrEmptySplit):
		return err
	}
	return nil
}

// newClassStatistics estimates the prototype of every class of the task from
// its rows of zNew (originals first, then flipped copies when flips is set).
func (r *Run) newClassStatistics(classes, idx []int, zNew []float32, flips bool, protos map[int]gauss.Gaussian) error {
	s := r.cfg.Model.FeatureDim
	var estimated []gauss.Gaussian
	for _, c := range classes {
		var rows []float32
		n := 0
		for pass := 0; pass < 1+btoi(flips); pass++ {
			for i, j := range idx {
				if r.train.Labels[j] == c {
					row := pass*len(idx) + i
					rows = append(rows, zNew[row*s:(row+1)*s]...)
					n++
				}
			}
		}
		// The diagonal fallback for a one-image class needs a variance of
		// the features' own scale: this task's classes estimated so far,
		// else the old prototypes, else 1.
		prior := 1.0
		if len(estimated) > 0 {
			prior = gauss.MeanVariance(estimated)
		} else if len(protos) > 0 {
			prior = gauss.MeanVariance(slices.Collect(maps.Values(protos)))
		}
		g, err := classStatistics(rows, n, s, prior)
		if err != nil {
			return fmt.Errorf("statistics of class %d (%d feature rows): %w", c, n, err)
		}
		protos[c] = g
		estimated = append(estimated, g)
		r.state.ClassCounts[c] = n / (1 + btoi(flips))
	}
	return nil
}

func termString(names []string, sums []float64, steps int) string {
	var b strings.Builder
	for i, name := range names {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s %.4f", name, sums[i]/float64(max(steps, 1)))
	}
	return b.String()
}

func percentRow(acc []float64) string {
	parts := make([]string, len(acc))
	for i, a := range acc {
		parts[i] = fmt.Sprintf("%.1f", 100*a)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
