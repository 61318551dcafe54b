package train

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/models/ops"
)

// Rehearsal is prototype rehearsal's part of a Stage I step
// (loss.rehearsal, docs/method.md "Prototype rehearsal", after EFC's PR-ACE):
// a head over all seen classes, trained each step with
//
//	L_pr = CE(H([sg A(p_old); z]), y_seen),   p_old ~ N(mu_c, Sigma_c), PerClass per old class c
//
// where z is z_new, or sg z_new when loss.rehearsal.backbone is false, and
// y_seen are labels over all seen classes. No gradient reaches A or the
// backbone from the pseudo-features p_old. The head is not kept after the
// task.
type Rehearsal struct {
	// Head maps S features to the seen classes: first the old classes in
	// the order of Old, then the task's classes in task-local label order.
	Head *models.Linear
	// Old are the stored Gaussians of the old classes in the old backbone's
	// feature space, where the step samples them.
	Old []gauss.Gaussian
	// PerClass is the number of pseudo-features drawn per old class per step.
	PerClass int
	// RNG draws the pseudo-features; the step advances it.
	RNG *rand.Rand
}

// pseudoRows is the number of pseudo-feature rows of one step.
func (rh *Rehearsal) pseudoRows() int { return len(rh.Old) * rh.PerClass }

// checkRehearsal reports whether nets.Rehearsal fits cfg and the step: it is
// required exactly when loss.rehearsal is on and the step has an old
// backbone and an adapter, and its head must cover the old and the task's
// classes.
func checkRehearsal(cfg config.Config, nets Stage1Nets, classes int) error {
	rh, s := nets.Rehearsal, nets.Backbone.FeatureDim()
	want := cfg.Loss.Rehearsal.Enabled && nets.Old != nil
	switch {
	case rh == nil && !want:
		return nil
	case rh == nil:
		return errors.New("stage I step: loss.rehearsal is on but Stage1Nets has no Rehearsal")
	case !want:
		return errors.New("stage I step: Stage1Nets.Rehearsal needs loss.rehearsal.enabled and an old backbone")
	case nets.Adapter == nil:
		return errors.New("stage I step: rehearsal needs the adapter A")
	case rh.Head == nil || rh.RNG == nil || len(rh.Old) == 0 || rh.PerClass < 1:
		return fmt.Errorf("stage I step: rehearsal needs a head, an rng, old classes and pseudo-features per class (%d old classes, %d per class)", len(rh.Old), rh.PerClass)
	case rh.Head.In() != s || rh.Head.Out() != len(rh.Old)+classes:
		return fmt.Errorf("stage I step: rehearsal head maps %d features to %d classes, want %d to %d old + %d new",
			rh.Head.In(), rh.Head.Out(), s, len(rh.Old), classes)
	}
	for i, g := range rh.Old {
		if g.Dim() != s {
			return fmt.Errorf("stage I step: rehearsal Gaussian %d has dimension %d, want %d", i, g.Dim(), s)
		}
	}
	return nil
}

// rehearsalTerm adds L_pr to the graph of sg (see Rehearsal) and returns the
// rehearsal head's parameters. zNew are the real features of the batch.
func rehearsalTerm(cfg config.Config, n stage1Nets, g *G.ExprGraph, sg *stage1Graph, zNew *G.Node, add func(string, *G.Node, float64) error) (G.Nodes, error) {
	rh, s := n.rehearsal, n.backbone.FeatureDim()
	p, seen := rh.pseudoRows(), rh.Head.Out()
	sg.pseudo = tensor.New(tensor.WithShape(p, s), tensor.Of(tensor.Float32))
	sg.onehotSeen = tensor.New(tensor.WithShape(p+n.rows, seen), tensor.Of(tensor.Float32))
	pseudo := G.NewMatrix(g, tensor.Float32, G.WithShape(p, s), G.WithName("pseudo_old"), G.WithValue(sg.pseudo))
	onehot := G.NewMatrix(g, tensor.Float32, G.WithShape(p+n.rows, seen), G.WithName("onehot_seen"), G.WithValue(sg.onehotSeen))
	moved, err := bindMapper(n.adapter, g).apply(pseudo)
	if err != nil {
		return nil, err
	}
	if moved, err = ops.StopGradient(moved); err != nil {
		return nil, err
	}
	real := zNew
	if !cfg.Loss.Rehearsal.Backbone {
		if real, err = ops.StopGradient(zNew); err != nil {
			return nil, err
		}
	}
	rows, err := G.Concat(0, moved, real)
	if err != nil {
		return nil, fmt.Errorf("rehearsal rows: %w", err)
	}
	logits, params, err := buildLinear(rh.Head, g, rows)
	if err != nil {
		return nil, err
	}
	ce, err := ops.CrossEntropy(logits, onehot)
	if err != nil {
		return nil, err
	}
	return params, add("pr", ce, cfg.Loss.Rehearsal.Lambda)
}

// fillRehearsal draws this step's pseudo-features into sg and sets the
// all-class targets: pseudo row r is old class r/PerClass, real row i is
// old classes + its task-local label.
func fillRehearsal(rh *Rehearsal, sg *stage1Graph, labels []int, copies int) error {
	pseudo := sg.pseudo.Data().([]float32)
	s := len(pseudo) / rh.pseudoRows()
	for c, g := range rh.Old {
		x, err := g.Sample(rh.RNG, rh.PerClass)
		if err != nil {
			return fmt.Errorf("rehearsal: old class %d: %w", c, err)
		}
		copy(pseudo[c*rh.PerClass*s:], x)
	}
	onehot := sg.onehotSeen.Data().([]float32)
	clear(onehot)
	k := rh.Head.Out()
	for r := range rh.pseudoRows() {
		onehot[r*k+r/rh.PerClass] = 1
	}
	for i, y := range labels {
		for q := range copies {
			onehot[(rh.pseudoRows()+copies*i+q)*k+len(rh.Old)+y] = 1
		}
	}
	return nil
}

// rehearsal returns task t's Rehearsal when loss.rehearsal is on and the
// task distils: the old classes are every stored prototype, in class-id
// order, and the head and the draws have their own random streams, so that
// switching rehearsal on changes no other random choice of the run.
func (r *Run) rehearsal(t, batch int, classes []int) *Rehearsal {
	rc := r.cfg.Loss.Rehearsal
	if !rc.Enabled || t == 0 || len(r.state.Prototypes) == 0 {
		return nil
	}
	ids := slices.Sorted(maps.Keys(r.state.Prototypes))
	old := make([]gauss.Gaussian, len(ids))
	for i, c := range ids {
		old[i] = r.state.Prototypes[c]
	}
	perClass := rc.PerClass
	if perClass == 0 {
		perClass = max(1, batch/len(classes))
	}
	head := models.NewLinear(r.cfg.Model.FeatureDim, len(ids)+len(classes), true, r.rng("rehearsal-head", t))
	r.log.printf("task %d: prototype rehearsal over %d old and %d new classes, %d pseudo-features per old class per step",
		t+1, len(ids), len(classes), perClass)
	return &Rehearsal{Head: head, Old: old, PerClass: perClass, RNG: r.rng("rehearsal", t)}
}
