package config

import "math"

// Rehearsal is prototype rehearsal in Stage I (docs/method.md, "Prototype
// rehearsal"), after PR-ACE in EFC (Magistri et al., ICLR 2024): on every
// task after the first, a head over all seen classes learns from
// pseudo-features of the old classes, drawn from their stored Gaussians and
// carried into the new space through the adapter A, next to the real
// features of the task's images. The head is a training device: the
// classifier stays the Gaussian one over the prototypes.
type Rehearsal struct {
	Enabled  bool    `mapstructure:"enabled" yaml:"enabled" doc:"Prototype rehearsal in Stage I of every task after the first (EFC's PR-ACE; method bicyc only): a head over all seen classes is trained with cross-entropy on pseudo-features of the old classes (drawn each step from their stored Gaussians, pushed through A with no gradient into A or the backbone) and on the real features of the new classes; the loss term is pr. Off is the paper's method."`
	Lambda   float64 `mapstructure:"lambda" yaml:"lambda" doc:"Weight of the rehearsal cross-entropy pr (a mean over pseudo and real rows together)."`
	PerClass int     `mapstructure:"per_class" yaml:"per_class" doc:"Pseudo-features drawn per old class per step; 0 means train.batch_size divided by the task's classes, as many as a new class has on average in a batch (class-balanced)."`
	Backbone bool    `mapstructure:"backbone" yaml:"backbone" doc:"The rehearsal cross-entropy of the real features reaches the backbone, pushing the new classes' features away from where the old classes lie in the new space; false is EFC's asymmetric form (the all-class head sees detached real features, the backbone learns from the task's own cross-entropy alone), which here trains only the discarded head."`
}

// DefaultRehearsal is prototype rehearsal's default: off; when switched on,
// weight 1, class-balanced pseudo-features, and the real features' all-class
// cross-entropy reaching the backbone, without which the term could not
// change the backbone, A, D or the prototypes (the head is discarded).
func DefaultRehearsal() Rehearsal {
	return Rehearsal{Lambda: 1, Backbone: true}
}

// validate checks the loss.rehearsal.* keys of c.
func (r Rehearsal) validate(c Config, bad problem) {
	if !(r.Lambda >= 0) || math.IsInf(r.Lambda, 0) {
		bad("loss.rehearsal.lambda", "must be finite and >= 0, got %g", r.Lambda)
	}
	if r.PerClass < 0 {
		bad("loss.rehearsal.per_class", "must be >= 0 (0: batch_size per task class), got %d", r.PerClass)
	}
	if r.Enabled && c.Method != MethodBicyc {
		bad("loss.rehearsal.enabled", "needs method bicyc (its adapter A carries the old classes into the new space during Stage I), got %s", c.Method)
	}
}
