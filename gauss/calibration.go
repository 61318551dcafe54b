package gauss

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// MinCalibrationImages is the fewest held-out images FitCalibration takes:
// below 20, the 95 % quantile of their unknown scores is their maximum, and
// the acceptance rate it promises is a guess.
const MinCalibrationImages = 20

// MaxCalibrationPairs bounds the held-out (image, class) scores a
// calibration holds at once: with K classes it takes at most
// MaxCalibrationPairs/K held-out images (CalibrationSample). The score
// matrix and the unknown scores' references cost some 26-52 bytes per
// pair, so without a bound a run of 20,000 classes holding out one image
// each took 363 s and 11 GB to export, and one of 5000 classes holding out
// 60 each would need 40-75 GB (docs/results/learn-classes.md). 20 M pairs
// (0.5-1 GB) keep every held-out image up to 2 million of them at 10
// classes, 4000 at 5000 classes and 1000 at 20,000.
const MaxCalibrationPairs = 20_000_000

// CalibrationSample returns which of n held-out images a calibration over
// k classes takes, ascending: all of them when n*k <= MaxCalibrationPairs,
// else MaxCalibrationPairs/k of them (at least MinCalibrationImages) drawn
// with seed. Images are drawn alike from every class, so each class keeps
// about its share; one left without any gets the median of the other
// classes' scales (FitCalibration), as a class added later does.
func CalibrationSample(n, k int, seed uint64) []int {
	limit := max(MinCalibrationImages, MaxCalibrationPairs/max(k, 1))
	if n <= limit {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	picked := rand.New(rand.NewPCG(seed, uint64(k))).Perm(n)[:limit]
	slices.Sort(picked)
	return picked
}

// referencePoints bounds the quantile table a Calibration keeps of the
// held-out unknown scores (0.1 % steps), so a large hold-out does not grow
// the manifest.
const referencePoints = 1001

// Temperature bounds of FitCalibration's search; both are far outside
// what a trained classifier needs.
const (
	minTemperature = 1e-3
	maxTemperature = 1e4
)

// ErrCalibration is wrapped by every error about calibration data: too few
// or unlabelled held-out images, negative distances, bad parameters.
var ErrCalibration = errors.New("invalid calibration")

// Calibration turns the classifier's scores of one image into a class
// posterior and an open-set ("unknown") decision. With d_c the score of
// class c (ClassifierTables; smaller is closer), q_c = d_c - b_c its squared
// Mahalanobis part, T the Temperature and s_c the Scales:
//
//	p(c | z) = exp(-d_c / 2T) / sum_j exp(-d_j / 2T)     (softmax over -d/2, tempered)
//	u(z)     = min_c q_c / s_c                           (unknown score)
//	unknown  = u(z) > tau
//
// With T = 1 and FullGaussian scores, p is the Bayes posterior of the
// Gaussian model; T is fitted so that p is calibrated on held-out images.
// s_c is the median q_c of held-out images of class c, so the unknown score
// measures every class in units of its own typical spread; u is the
// Mahalanobis open-set detector (Lee et al., NeurIPS 2018) with that per-class
// scale. tau is the quantile of u over held-out known-class images at the
// requested acceptance rate (Threshold), so that share of known images is
// accepted. Reference holds that distribution as a sorted quantile table.
//
// A Calibration is read-only after FitCalibration and safe for concurrent
// use.
type Calibration struct {
	Temperature float64
	Scales      []float64 // [K], > 0
	Reference   []float64 // sorted quantiles of u on held-out images, 0 % to 100 %
	// References holds the same quantile table for the other
	// UnknownScores, from OpenSet.References; nil for a calibration fitted
	// before scores could be chosen, which knows ScoreMahalanobis only.
	References map[UnknownScore][]float64
}

// FitCalibration fits a Calibration from the scores [n, K] (row-major) of n
// held-out images of known classes, labels[i] being the column of image i's
// true class, and bias [K] the b_c of the tables (nil for zeros). The
// temperature minimises the held-out negative log-likelihood of the true
// class (a golden-section search over log T in [1e-3, 1e4]; the loss is
// convex in 1/T). A class without held-out images gets the median of the
// other classes' scales. Errors wrap ErrCalibration: fewer than
// MinCalibrationImages rows, a label outside [0, K), non-finite scores,
// or a negative squared distance q_c.
func FitCalibration(scores []float32, n, k int, labels []int, bias []float32) (Calibration, error) {
	q, err := checkCalibrationData(scores, n, k, labels, bias)
	if err != nil {
		return Calibration{}, err
	}
	cal := Calibration{Scales: classScales(q, n, k, labels)}
	cal.Temperature = fitTemperature(scores, n, k, labels)
	u := make([]float64, n)
	for i := range n {
		u[i] = cal.unknownScore(q[i*k : (i+1)*k])
	}
	slices.Sort(u)
	cal.Reference = quantileTable(u)
	return cal, nil
}

// checkCalibrationData validates FitCalibration's input and returns the
// squared distances q = scores - bias as float64.
func checkCalibrationData(scores []float32, n, k int, labels []int, bias []float32) ([]float64, error) {
	if k < 1 || len(scores) != n*k || len(labels) != n || (bias != nil && len(bias) != k) {
		return nil, fmt.Errorf("%w: %d scores, %d labels and %d biases for %d images of %d classes", ErrCalibration, len(scores), len(labels), len(bias), n, k)
	}
	if n < MinCalibrationImages {
		return nil, fmt.Errorf("%w: %d held-out images, want at least %d", ErrCalibration, n, MinCalibrationImages)
	}
	q := make([]float64, n*k)
	for i, y := range labels {
		if y < 0 || y >= k {
			return nil, fmt.Errorf("%w: image %d has label %d, want a class index in [0, %d)", ErrCalibration, i, y, k)
		}
		for c := range k {
			v := float64(scores[i*k+c])
			if bias != nil {
				v -= float64(bias[c])
			}
			if !isFinite(v) || v < -1e-3 {
				return nil, fmt.Errorf("%w: image %d, class %d: squared distance %v, want a finite value >= 0", ErrCalibration, i, c, v)
			}
			q[i*k+c] = max(v, 0)
		}
	}
	return q, nil
}

// classScales returns s_c, the median own-class squared distance per class.
func classScales(q []float64, n, k int, labels []int) []float64 {
	own := make([][]float64, k)
	for i, y := range labels {
		own[y] = append(own[y], q[i*k+y])
	}
	scales := make([]float64, k)
	var known []float64
	for c, d := range own {
		if len(d) > 0 {
			slices.Sort(d)
			scales[c] = max(quantile(d, 0.5), Ridge)
			known = append(known, scales[c])
		}
	}
	slices.Sort(known)
	fill := quantile(known, 0.5)
	for c := range scales {
		if scales[c] == 0 {
			scales[c] = fill
		}
	}
	return scales
}

// fitTemperature minimises the mean negative log-likelihood of the labels.
func fitTemperature(scores []float32, n, k int, labels []int) float64 {
	nll := func(logT float64) float64 {
		t := math.Exp(logT)
		var sum float64
		logits := make([]float64, k)
		for i := range n {
			for c := range k {
				logits[c] = -float64(scores[i*k+c]) / (2 * t)
			}
			sum += logSumExp(logits) - logits[labels[i]]
		}
		return sum / float64(n)
	}
	lo, hi := math.Log(minTemperature), math.Log(maxTemperature)
	phi := (math.Sqrt(5) - 1) / 2
	a, b := hi-phi*(hi-lo), lo+phi*(hi-lo)
	fa, fb := nll(a), nll(b)
	for hi-lo > 1e-4 {
		if fa <= fb {
			hi, b, fb = b, a, fa
			a = hi - phi*(hi-lo)
			fa = nll(a)
		} else {
			lo, a, fa = a, b, fb
			b = lo + phi*(hi-lo)
			fb = nll(b)
		}
	}
	return math.Exp((lo + hi) / 2)
}

func logSumExp(v []float64) float64 {
	m := slices.Max(v)
	var s float64
	for _, x := range v {
		s += math.Exp(x - m)
	}
	return m + math.Log(s)
}

// quantile returns the p-quantile of sorted values, interpolating linearly
// between order statistics (position p*(n-1)); NaN for no values.
func quantile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	pos := p * float64(n-1)
	i := int(math.Floor(pos))
	if i >= n-1 {
		return sorted[n-1]
	}
	return sorted[i] + (pos-float64(i))*(sorted[i+1]-sorted[i])
}

// quantileTable returns sorted itself when short, else its quantiles at
// referencePoints evenly spaced levels; quantile of the table then matches
// quantile of the data at those levels.
func quantileTable(sorted []float64) []float64 {
	if len(sorted) <= referencePoints {
		return sorted
	}
	out := make([]float64, referencePoints)
	for i := range out {
		out[i] = quantile(sorted, float64(i)/(referencePoints-1))
	}
	return out
}

// Validate reports whether c can score k classes: a finite positive
// temperature, k finite positive scales, and a non-empty, sorted, finite
// reference. Errors wrap ErrCalibration.
func (c Calibration) Validate(k int) error {
	if !(c.Temperature > 0) || math.IsInf(c.Temperature, 0) {
		return fmt.Errorf("%w: temperature %v, want a finite value > 0", ErrCalibration, c.Temperature)
	}
	if len(c.Scales) != k {
		return fmt.Errorf("%w: %d class scales for %d classes", ErrCalibration, len(c.Scales), k)
	}
	for i, s := range c.Scales {
		if !(s > 0) || math.IsInf(s, 0) {
			return fmt.Errorf("%w: scale of class %d is %v, want a finite value > 0", ErrCalibration, i, s)
		}
	}
	if len(c.Reference) == 0 || !slices.IsSorted(c.Reference) {
		return fmt.Errorf("%w: reference quantiles must be a non-empty ascending list", ErrCalibration)
	}
	for i, v := range c.Reference {
		if !isFinite(v) || v < 0 {
			return fmt.Errorf("%w: reference quantile %d is %v, want a finite value >= 0", ErrCalibration, i, v)
		}
	}
	for u, ref := range c.References {
		if _, err := ParseUnknownScore(string(u)); err != nil || u == "" {
			return fmt.Errorf("%w: reference of score %q: %w", ErrCalibration, u, ErrUnknownScore)
		}
		if len(ref) == 0 || !slices.IsSorted(ref) || slices.ContainsFunc(ref, func(v float64) bool { return !isFinite(v) }) {
			return fmt.Errorf("%w: reference quantiles of score %s must be a non-empty ascending list of finite values", ErrCalibration, u)
		}
	}
	return nil
}

// ErrNoReference is wrapped by ThresholdOf for a score the calibration
// has no held-out values of.
var ErrNoReference = errors.New("calibration has no held-out values of this score")

// Has reports whether c can threshold score u: ScoreMahalanobis always,
// another score when the calibration holds its reference.
func (c Calibration) Has(u UnknownScore) bool {
	_, ok := c.References[u]
	return u == ScoreMahalanobis || ok
}

// reference returns the held-out quantiles of score u: Reference for
// ScoreMahalanobis where References (as a model directory stores them)
// leaves it out.
func (c Calibration) reference(u UnknownScore) ([]float64, bool) {
	if ref, ok := c.References[u]; ok {
		return ref, true
	}
	if u == ScoreMahalanobis && len(c.Reference) > 0 {
		return c.Reference, true
	}
	return nil, false
}

// ThresholdOf returns the threshold of score u for an acceptance rate in
// (0, 1]: the rate-quantile of u over the held-out images, so that share of
// known-class images scores at most the threshold. A score c has no
// reference of (see Has) is an error wrapping ErrNoReference. It panics on
// a rate outside (0, 1].
func (c Calibration) ThresholdOf(u UnknownScore, acceptRate float64) (float64, error) {
	if u == ScoreMahalanobis {
		return c.Threshold(acceptRate), nil
	}
	ref, ok := c.References[u]
	if !ok {
		return 0, fmt.Errorf("score %s: %w (fitted before scores could be chosen: calibrate the model again)", u, ErrNoReference)
	}
	if !(acceptRate > 0 && acceptRate <= 1) {
		panic(fmt.Sprintf("gauss: threshold: acceptance rate %v outside (0, 1]", acceptRate))
	}
	return quantile(ref, acceptRate), nil
}

// Threshold returns tau for an acceptance rate in (0, 1]: the rate-quantile
// of the held-out unknown scores, so that share of known-class images has
// u <= tau. It panics on a rate ValidateAcceptRate refuses.
func (c Calibration) Threshold(acceptRate float64) float64 {
	if err := ValidateAcceptRate(acceptRate); err != nil {
		panic("gauss: threshold: " + err.Error())
	}
	return quantile(c.Reference, acceptRate)
}

// Posterior returns p(c | z) for one image's K scores (see Calibration).
func (c Calibration) Posterior(scores []float32) []float64 {
	p := make([]float64, len(scores))
	for i, d := range scores {
		p[i] = -float64(d) / (2 * c.Temperature)
	}
	lse := logSumExp(p)
	for i := range p {
		p[i] = math.Exp(p[i] - lse)
	}
	return p
}

// UnknownScore returns u(z) = min_c (d_c - b_c) / s_c for one image's K
// scores and the tables' bias (nil for zeros). It panics if the lengths
// differ from len(c.Scales).
func (c Calibration) UnknownScore(scores, bias []float32) float64 {
	if len(scores) != len(c.Scales) || (bias != nil && len(bias) != len(scores)) {
		panic(fmt.Sprintf("gauss: unknown score: %d scores and %d biases for %d classes", len(scores), len(bias), len(c.Scales)))
	}
	q := make([]float64, len(scores))
	for i, d := range scores {
		q[i] = float64(d)
		if bias != nil {
			q[i] -= float64(bias[i])
		}
		q[i] = max(q[i], 0)
	}
	return c.unknownScore(q)
}

func (c Calibration) unknownScore(q []float64) float64 {
	u := math.Inf(1)
	for i, v := range q {
		u = min(u, v/c.Scales[i])
	}
	return u
}

// WithClasses returns a copy of c extended to k >= len(c.Scales) classes:
// the new classes, which have no held-out images (added from a few labelled
// images without retraining), get the median of the existing scales. The
// temperature and reference are kept, so tau still accepts the requested
// share of the original classes' images.
func (c Calibration) WithClasses(k int) Calibration {
	out := Calibration{Temperature: c.Temperature, Reference: slices.Clone(c.Reference), Scales: slices.Clone(c.Scales)}
	if c.References != nil {
		out.References = make(map[UnknownScore][]float64, len(c.References))
		for u, ref := range c.References {
			out.References[u] = slices.Clone(ref)
		}
	}
	sorted := slices.Sorted(slices.Values(c.Scales))
	fill := quantile(sorted, 0.5)
	for len(out.Scales) < k {
		out.Scales = append(out.Scales, fill)
	}
	return out
}
