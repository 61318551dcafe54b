package gauss

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// DefaultAcceptRate is the share of known-class images that a calibrated
// classifier accepts by default; the rest of them, and every image farther
// from all classes than they are, is "unknown".
const DefaultAcceptRate = 0.95

// DefaultShortlist is the share of classes scored exactly by default
// (ClassifierOptions.Shortlist): 1/40, which keeps 128 of 5000 classes and
// 500 of 20,000, where the measured agreement with the exact top-1 was
// 99.98 % and 99.97 % of the Fashion-MNIST test images (docs/classes.md).
const DefaultShortlist = 0.025

// ShortlistMinClasses is the class count from which a model scores a
// shortlist (ClassifierOptions.Shortlist): below it the exact scores
// cost about what the int8 pass alone does (measured at 1000 classes,
// docs/classes.md).
const ShortlistMinClasses = 1000

// ShortlistMinSize is the fewest classes a shortlist rescores exactly.
const ShortlistMinSize = 128

// DefaultTopK is how many predictions per image a reader reports when
// ClassifierOptions.TopK is 0.
const DefaultTopK = 5

// ResolveTopK is how many predictions per image a reader of k classes
// reports: the first of choices that is not 0 (a reader's own choice
// first, then the model's classifier.top_k), DefaultTopK when every one is
// 0, and never more than k. The exporter and the runtime both resolve
// top-k through it.
func ResolveTopK(k int, choices ...int) int {
	topK := DefaultTopK
	for _, c := range choices {
		if c != 0 {
			topK = c
			break
		}
	}
	return min(topK, k)
}

// ErrOptions is wrapped by every error about classifier options or an
// acceptance rate out of range.
var ErrOptions = errors.New("invalid classifier options")

// ClassifierOptions are every option of the classifier, defined once: the
// training configuration (package config, keys classifier.*), the model
// manifest (package bundle, "classifier") and the runtime (package infer)
// use this type, and Validate is the one check of their ranges, so the
// three cannot disagree. DefaultClassifierOptions gives the published
// setting (docs/method.md, "Classifier").
//
// The tags name each option in the configuration (mapstructure, yaml; doc
// is its line in configs/README.md) and in manifest.json (json). A new
// option is a field here, with its tags and its range in Problems.
type ClassifierOptions struct {
	// Shrink is gamma in Sigma' = Sigma + gamma*(tr(Sigma)/S)*I + 1e-8 I;
	// the authors use 3 at test time. Must be finite and >= 0.
	Shrink float64 `json:"shrink" mapstructure:"shrink" yaml:"shrink" doc:"Covariance shrinkage at test time: adds shrink*mean(diag)*I (authors' code: 3)."`
	// Normalize turns Sigma' into its correlation matrix and L2-normalises
	// both the feature and the class mean before the distance (on in the
	// published runs).
	Normalize bool `json:"normalize" mapstructure:"normalize" yaml:"normalize" doc:"Correlation matrix and L2-normalised feature and mean before the distance (docs/method.md: on)."`
	// FullGaussian adds log det Sigma'_c - 2 log pi_c to the score, the
	// paper's eq. (bayes_score); off in the published runs. With Normalize
	// the log det is that of the correlation matrix, whose unit diagonal is
	// far from the scale of unit-norm features, so the bias swamps the
	// quadratic term (on pooled Fashion-MNIST pixels every test image went to
	// one class): combine FullGaussian with Normalize only to reproduce that.
	FullGaussian bool `json:"full_gaussian" mapstructure:"full_gaussian" yaml:"full_gaussian" doc:"Add log det Sigma and -2 log prior to the distance (the paper's full Bayes score)."`
	// TopK is how many predictions per image a reader of the scores
	// reports, closest first; 0 means DefaultTopK. NewClassifier does not
	// read it. Must be >= 0.
	TopK int `json:"top_k" mapstructure:"top_k" yaml:"top_k" doc:"Predictions reported per image by the exported model (0: 5)."`

	// Head is the classifier over the prototypes (docs/method.md,
	// "Classifier"): HeadGaussian (also the empty string, what a manifest
	// before schema version 7 means) scores the Mahalanobis distance to
	// every class's Gaussian; HeadSoftmax fits a linear softmax on samples
	// drawn from every class's Gaussian (SoftmaxTables) and scores with it,
	// leaving the covariance options (Shrink, OffDiagShrink, AgeShrink,
	// PoolCov) to the Gaussian part of GaussianWeight. Must be empty or one
	// of Heads; HeadSoftmax excludes FullGaussian.
	Head Head `json:"head,omitempty" mapstructure:"head" yaml:"head" doc:"The classifier over the prototypes: gaussian (the Mahalanobis distance to each class's Gaussian, the paper's) or softmax (a linear softmax fitted on samples of every class's Gaussian; docs/method.md, Classifier head)."`
	// GaussianWeight, lambda, mixes the Gaussian classifier into the
	// softmax head (docs/method.md, "Classifier head"): class c's score is
	//
	//	score_c = head_c + AgeBias*Ages[c] + lambda * gauss_c
	//
	// with head_c the softmax head's score (SoftmaxTables) and gauss_c the
	// Gaussian head's score of the same prototypes under this value's own
	// Gaussian-side options (Shrink, Normalize, OffDiagShrink, AgeShrink,
	// PoolCov; FullGaussian is refused with HeadSoftmax, and the age bias
	// is counted once, in the head's part). In every shipped configuration
	// those are DefaultClassifierOptions' (shrink 3, normalize on, the
	// others 0), the Gaussian classifier bench/coldstart mixed in. The sum
	// of the two quadratic scores is itself one, so the tables, the
	// exported graph and the calibration keep their form (NewClassifier).
	// 0, also what a run or manifest written before the option means, is
	// the head alone. Must be finite and >= 0, and 0 unless Head is
	// HeadSoftmax.
	GaussianWeight float64 `json:"gaussian_weight,omitempty" mapstructure:"gaussian_weight" yaml:"gaussian_weight" doc:"With head softmax: add gaussian_weight times the Gaussian classifier's score (shrink, normalize, off_diag_shrink, age_shrink, pool_cov as set) to the head's (docs/method.md, Classifier head); 0: the head alone."`

	// The calibration options below are off at 0 (docs/method.md,
	// "Classifier calibration"); off, the classifier is the published one
	// bit for bit. A manifest before schema version 3 has none of them.

	// OffDiagShrink is FeCAM's gamma2: gamma2 times the mean off-diagonal
	// entry of Sigma_c is added to every off-diagonal entry (ShrinkSeparate).
	// Must be finite and >= 0.
	OffDiagShrink float64 `json:"off_diag_shrink,omitempty" mapstructure:"off_diag_shrink" yaml:"off_diag_shrink" doc:"FeCAM's separate off-diagonal shrinkage: adds off_diag_shrink times the mean off-diagonal covariance entry to every off-diagonal entry (0: off)."`
	// AgeShrink adds, per task learned since class c's own (Ages[c], the
	// number of transports its prototype went through), this much to
	// Shrink: gamma1_c = Shrink + AgeShrink*Ages[c]. Must be finite and >= 0.
	AgeShrink float64 `json:"age_shrink,omitempty" mapstructure:"age_shrink" yaml:"age_shrink" doc:"Extra diagonal shrinkage per task learned since a class's own (per transport its prototype went through): shrink + age_shrink*age (0: off)."`
	// PoolCov is lambda in [0, 1]: each class's covariance is blended with
	// the mean covariance of all classes before shrinkage (PoolCovariances).
	PoolCov float64 `json:"pool_cov,omitempty" mapstructure:"pool_cov" yaml:"pool_cov" doc:"Blend each class's covariance with the mean covariance of all seen classes before shrinkage: (1-pool_cov)*Sigma_c + pool_cov*mean (0: off, 1: one shared covariance)."`
	// AgeBias adds AgeBias*Ages[c] to class c's score (into b_c): negative
	// favours older classes, positive newer ones. Must be finite.
	AgeBias float64 `json:"age_bias,omitempty" mapstructure:"age_bias" yaml:"age_bias" doc:"Added to a class's distance per task learned since its own: negative favours old classes, positive new ones (0: off)."`
	// TestFlip averages the scores of every image and of its horizontal
	// mirror (MeanScores); absent, off, before manifest schema version 4.
	// model.onnx scores one image, so a reader runs it on both and averages.
	TestFlip bool `json:"test_flip,omitempty" mapstructure:"test_flip" yaml:"test_flip" doc:"Test-time augmentation: score every image and its horizontal mirror and average the two scores; twice the backbone's work per image. Meant for data.horizontal_flip, whose mirrored copies enter the class statistics."`

	// UnknownScore is the score a reader answers "unknown" by unless asked
	// for another (UnknownScores; infer.WithUnknownScore); empty in a
	// manifest written before scores could be chosen, which answers by
	// ScoreMahalanobis (ScoreNearestDistance without calibration).
	// NewClassifier does not read it. Must be empty or a name of
	// UnknownScores.
	UnknownScore UnknownScore `json:"unknown_score,omitempty" mapstructure:"unknown_score" yaml:"unknown_score" doc:"The score an exported model answers unknown by: vim, mahalanobis, nearest-distance, energy, max-probability, relative-mahalanobis, residual, cosine or mahalanobis-probability-residual (docs/serving.md, which unknown score)."`

	// Shortlist is the share of the classes that a model of
	// ShortlistMinClasses classes or more scores exactly per image: an int8
	// approximate score of every class picks them (at least
	// ShortlistMinSize), and the predictions are the best of their exact
	// scores (docs/classes.md, "Shortlist"). At batch 1 the exact scores
	// read the whole class table per image; the int8 table is a quarter of
	// it. 0 scores every class exactly, as does a model of fewer classes
	// or with TestFlip. Absent, 0, before manifest schema version 6.
	// NewClassifier does not read it. Must be in [0, 1].
	Shortlist float64 `json:"shortlist,omitempty" mapstructure:"shortlist" yaml:"shortlist" doc:"Share of the classes a model of 1000 classes or more scores exactly per image, picked by an int8 approximate score of every class (at least 128 of them; docs/classes.md, Shortlist); 0: exact scores of every class."`

	// Ages holds, per class, the tasks learned since its own; nil means 0
	// for every class. Used only by AgeShrink and AgeBias. It describes
	// the classes, not the options, so it is never configured or stored
	// with them (a manifest keeps it per class, bundle.Class.Age): set it
	// with WithAges.
	Ages []int `json:"-" mapstructure:"-" yaml:"-"`
}

// DefaultClassifierOptions returns Shrink 3, Normalize true, FullGaussian
// false, TopK DefaultTopK (docs/method.md, "Classifier") and
// DefaultUnknownScore.
func DefaultClassifierOptions() ClassifierOptions {
	return ClassifierOptions{Shrink: 3, Normalize: true, TopK: DefaultTopK, UnknownScore: DefaultUnknownScore, Shortlist: DefaultShortlist}
}

// ShortlistSize returns how many of k classes a model scores exactly per
// image under o (Shortlist): 0, every class exactly, when Shortlist is 0,
// k < ShortlistMinClasses or TestFlip is on (the scores of an image and of
// its mirror are averaged class by class, so both need every class);
// else ceil(Shortlist*k), at least ShortlistMinSize and at most k.
func (o ClassifierOptions) ShortlistSize(k int) int {
	if o.Shortlist <= 0 || k < ShortlistMinClasses || o.TestFlip {
		return 0
	}
	return min(k, max(ShortlistMinSize, int(math.Ceil(o.Shortlist*float64(k)))))
}

// WithAges returns o with Ages set to ages, one per class in score order,
// when an option reads them (AgeShrink or AgeBias), else with none.
func (o ClassifierOptions) WithAges(ages []int) ClassifierOptions {
	o.Ages = nil
	if o.AgeShrink != 0 || o.AgeBias != 0 {
		o.Ages = append([]int(nil), ages...)
	}
	return o
}

// UnmarshalJSON reads the options by their json tags, as manifest.json
// holds them, and refuses unknown keys. It also reads the field names
// ("FullGaussian", "TopK") under which a run's stream.json recorded the
// classifier of a learned task's configuration before these options had
// one definition, so such a run resumes with the classifier it learned
// with.
func (o *ClassifierOptions) UnmarshalJSON(b []byte) error {
	type tagged ClassifierOptions // without this method
	var aux struct {
		tagged
		FullGaussian  *bool    `json:"FullGaussian"`
		TopK          *int     `json:"TopK"`
		OffDiagShrink *float64 `json:"OffDiagShrink"`
		AgeShrink     *float64 `json:"AgeShrink"`
		PoolCov       *float64 `json:"PoolCov"`
		AgeBias       *float64 `json:"AgeBias"`
		TestFlip      *bool    `json:"TestFlip"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&aux); err != nil {
		return err
	}
	*o = ClassifierOptions(aux.tagged)
	fromField(&o.FullGaussian, aux.FullGaussian)
	fromField(&o.TopK, aux.TopK)
	fromField(&o.OffDiagShrink, aux.OffDiagShrink)
	fromField(&o.AgeShrink, aux.AgeShrink)
	fromField(&o.PoolCov, aux.PoolCov)
	fromField(&o.AgeBias, aux.AgeBias)
	fromField(&o.TestFlip, aux.TestFlip)
	return nil
}

// fromField sets *dst to a value read under its field name, if there was one.
func fromField[T any](dst, src *T) {
	if src != nil {
		*dst = *src
	}
}

// OptionError is one option out of its range: Key is its name in the
// configuration and the manifest (the tag), Want the range. It wraps
// ErrOptions.
type OptionError struct {
	Key   string
	Value any
	Want  string
}

func (e *OptionError) Error() string { return fmt.Sprintf("%s %v, want %s", e.Key, e.Value, e.Want) }

// Unwrap returns ErrOptions.
func (e *OptionError) Unwrap() error { return ErrOptions }

// Problems lists every option of o out of its range, in field order; NaN
// and ±Inf are out of every range. Ages are checked against the number of
// classes by NewClassifier.
func (o ClassifierOptions) Problems() []*OptionError {
	var out []*OptionError
	nonNegative := func(key string, v float64) {
		if !(v >= 0) || math.IsInf(v, 0) {
			out = append(out, &OptionError{key, v, "a finite value >= 0"})
		}
	}
	nonNegative("shrink", o.Shrink)
	if o.TopK < 0 {
		out = append(out, &OptionError{"top_k", o.TopK, "a value >= 0 (0: the default)"})
	}
	nonNegative("off_diag_shrink", o.OffDiagShrink)
	nonNegative("age_shrink", o.AgeShrink)
	if !(o.PoolCov >= 0 && o.PoolCov <= 1) {
		out = append(out, &OptionError{"pool_cov", o.PoolCov, "a value in [0, 1]"})
	}
	if math.IsNaN(o.AgeBias) || math.IsInf(o.AgeBias, 0) {
		out = append(out, &OptionError{"age_bias", o.AgeBias, "a finite value"})
	}
	if _, err := ParseUnknownScore(string(o.UnknownScore)); err != nil {
		out = append(out, &OptionError{"unknown_score", o.UnknownScore, "empty or one of " + scoreList()})
	}
	switch o.Head {
	case "", HeadGaussian:
	case HeadSoftmax:
		if o.FullGaussian {
			out = append(out, &OptionError{"full_gaussian", o.FullGaussian, "false with head " + string(HeadSoftmax)})
		}
	default:
		out = append(out, &OptionError{"head", o.Head, fmt.Sprintf("empty, %s or %s", HeadGaussian, HeadSoftmax)})
	}
	if !(o.GaussianWeight >= 0) || math.IsInf(o.GaussianWeight, 0) {
		out = append(out, &OptionError{"gaussian_weight", o.GaussianWeight, "a finite value >= 0"})
	} else if o.GaussianWeight != 0 && o.Head != HeadSoftmax {
		out = append(out, &OptionError{"gaussian_weight", o.GaussianWeight, "0 unless head is " + string(HeadSoftmax)})
	}
	if !(o.Shortlist >= 0 && o.Shortlist <= 1) {
		out = append(out, &OptionError{"shortlist", o.Shortlist, "a value in [0, 1] (0: exact scores)"})
	}
	return out
}

// Validate returns nil when every option is in range, else the Problems
// joined, each wrapping ErrOptions.
func (o ClassifierOptions) Validate() error {
	var errs []error
	for _, p := range o.Problems() {
		errs = append(errs, p)
	}
	return errors.Join(errs...)
}

// ValidateAcceptRate is the one check of an acceptance rate (the share of
// known-class images a calibrated classifier accepts): it must lie in
// (0, 1], which refuses NaN and ±Inf. The error wraps ErrOptions.
func ValidateAcceptRate(rate float64) error {
	if !(rate > 0 && rate <= 1) {
		return &OptionError{"accept_rate", rate, "a value in (0, 1]"}
	}
	return nil
}
