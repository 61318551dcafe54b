package gauss

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// UnknownScore names one measure of how unlike every known class an image
// is (larger: more likely unknown). Every score is computed from what a
// model directory holds, the class Gaussians and the classifier's scores,
// so none needs an old image; a Calibration turns any of them into an
// "unknown" decision through the quantile of its held-out values.
type UnknownScore string

// The unknown scores. With d_c the classifier's score of class c, b_c its
// bias, q_c = d_c - b_c the squared Mahalanobis part, s_c the Calibration's
// class scales, T its temperature, z the backbone feature and S its
// dimension:
const (
	// ScoreMahalanobis is min_c q_c / s_c: the nearest class in units of
	// its own typical held-out distance (Lee et al., NeurIPS 2018, with a
	// per-class scale). It is the score of every model calibrated before
	// scores could be chosen.
	ScoreMahalanobis UnknownScore = "mahalanobis"
	// ScoreNearestDistance is min_c q_c, the plain nearest distance.
	ScoreNearestDistance UnknownScore = "nearest-distance"
	// ScoreRelativeMahalanobis is min_c q_c - q_0(z), with q_0 the squared
	// Mahalanobis distance to the Background Gaussian of all training
	// features measured as the classifier measures a class (its shrinkage
	// and normalisation; Ren et al., 2021): what is typical of every class
	// alike no longer counts as evidence of the unknown.
	ScoreRelativeMahalanobis UnknownScore = "relative-mahalanobis"
	// ScoreEnergy is -T log sum_c exp(-d_c / 2T): the negative log of the
	// tempered likelihood of all classes together (Liu et al., NeurIPS
	// 2020), low when any class explains the image.
	ScoreEnergy UnknownScore = "energy"
	// ScoreMaxProbability is 1 - max_c p(c | z), the calibrated posterior's
	// complement (Hendrycks and Gimpel, ICLR 2017).
	ScoreMaxProbability UnknownScore = "max-probability"
	// ScoreResidual is the part of z - mu_0 outside the principal subspace
	// of the Background covariance (the subspace holding 90 % of its
	// variance), squared and divided by the variance the background expects
	// there: ViM's residual (Wang et al., CVPR 2022) with the background
	// mean as origin.
	ScoreResidual UnknownScore = "residual"
	// ScoreCosine is 1 - max_c cos(z - mu_0, mu_c - mu_0): the nearest
	// neighbour among the centred, L2-normalised class means (Sun et al.,
	// ICML 2022, with one stored point per class, since no training image
	// is kept).
	ScoreCosine UnknownScore = "cosine"
	// ScoreViM adds ScoreEnergy and ScoreResidual, each standardised by its
	// held-out quantiles ((v - median) / (95th percentile - median)), as
	// ViM (Wang et al., CVPR 2022) adds a feature residual to the energy:
	// the energy sees images between or far from the classes, the residual
	// images off the classes' subspace. It needs a calibration that holds
	// both scores' references (NaN otherwise).
	ScoreViM UnknownScore = "vim"
	// ScoreMahalanobisProbabilityResidual adds ScoreMahalanobis,
	// ScoreMaxProbability and ScoreResidual, each standardised as ScoreViM
	// standardises its parts: the posterior's doubt sees images between
	// two known classes (a new kind of garment), the class-scaled distance
	// images beside every class, the residual images off the classes'
	// subspace. Chosen on a validation split with a held-out class among
	// the sums of the one-pass scores (docs/results/openset-near.md): near
	// AUROC 0.70 against ViM's 0.57 at about the same far AUROC (0.991
	// against 0.994), at the cost of more far images accepted at the
	// calibrated threshold. It needs a calibration that holds the three
	// scores' references (NaN otherwise).
	ScoreMahalanobisProbabilityResidual UnknownScore = "mahalanobis-probability-residual"
)

// standardisedParts are the scores each sum of standardised scores adds.
var standardisedParts = map[UnknownScore][]UnknownScore{
	ScoreViM:                            {ScoreEnergy, ScoreResidual},
	ScoreMahalanobisProbabilityResidual: {ScoreMahalanobis, ScoreMaxProbability, ScoreResidual},
}

// UnknownScores lists every UnknownScore, ScoreMahalanobis first.
func UnknownScores() []UnknownScore {
	return []UnknownScore{ScoreMahalanobis, ScoreNearestDistance, ScoreRelativeMahalanobis, ScoreEnergy,
		ScoreMaxProbability, ScoreResidual, ScoreCosine, ScoreViM, ScoreMahalanobisProbabilityResidual}
}

// ErrUnknownScore is wrapped by ParseUnknownScore's errors.
var ErrUnknownScore = errors.New("unknown score name")

// ParseUnknownScore returns the score named s (case-insensitive); the
// empty string is ScoreMahalanobis.
func ParseUnknownScore(s string) (UnknownScore, error) {
	if s == "" {
		return ScoreMahalanobis, nil
	}
	for _, u := range UnknownScores() {
		if strings.EqualFold(s, string(u)) {
			return u, nil
		}
	}
	return "", fmt.Errorf("%w %q: want one of %s", ErrUnknownScore, s, scoreList())
}

// scoreList is the names of UnknownScores, comma-separated.
func scoreList() string {
	names := make([]string, 0, len(UnknownScores()))
	for _, u := range UnknownScores() {
		names = append(names, string(u))
	}
	return strings.Join(names, ", ")
}

// NeedsFeature reports whether the score reads the backbone feature z, not
// only the classifier's scores (so a reader must run the backbone too).
func (u UnknownScore) NeedsFeature() bool {
	switch u {
	case ScoreRelativeMahalanobis, ScoreResidual, ScoreCosine, ScoreViM, ScoreMahalanobisProbabilityResidual:
		return true
	}
	return false
}

// backgroundShrink is the diagonal added to the Background covariance, as
// a share of its mean variance: enough to factorise a covariance whose
// smallest directions the classes never spread into, small enough to
// leave the others as estimated.
const backgroundShrink = 1e-3

// principalVariance is the share of the Background variance that
// ScoreResidual's principal subspace holds.
const principalVariance = 0.90

// Background is the Gaussian N(mu_0, Sigma_0) of all training features,
// built from the class Gaussians alone (exemplar-free): the moment-matched
// mixture of the classes with equal weights,
//
//	mu_0    = mean_c mu_c
//	Sigma_0 = mean_c (Sigma_c + (mu_c - mu_0)(mu_c - mu_0)^T) + backgroundShrink*tr/S*I
//
// which is the covariance of the training features themselves when every
// class has as many images. It is read-only after NewBackground.
type Background struct {
	mean  []float64
	cov   *mat.SymDense
	chol  *mat.Cholesky
	minor *mat.Dense // S x r: the eigenvectors outside the principal subspace
	// minorVariance is the sum of the minor eigenvalues: the expected
	// squared residual of a background sample.
	minorVariance float64
}

// NewBackground builds the Background of the class Gaussians protos (at
// least one, of one dimension). Errors wrap ErrShape, ErrNonFinite or
// ErrNotPositiveDefinite.
func NewBackground(protos []Gaussian) (*Background, error) {
	if len(protos) == 0 {
		return nil, fmt.Errorf("gauss: background of no classes: %w", ErrShape)
	}
	s := protos[0].Dim()
	mean := make([]float64, s)
	for c, p := range protos {
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("gauss: background: class %d: %w", c, err)
		}
		if p.Dim() != s {
			return nil, fmt.Errorf("gauss: background: class %d has dimension %d, class 0 has %d: %w", c, p.Dim(), s, ErrShape)
		}
		for i, v := range p.Mean {
			mean[i] += v / float64(len(protos))
		}
	}
	cov := mat.NewSymDense(s, nil)
	w := 1 / float64(len(protos))
	d := make([]float64, s)
	for _, p := range protos {
		for i := range d {
			d[i] = p.Mean[i] - mean[i]
		}
		for i := range s {
			for j := i; j < s; j++ {
				cov.SetSym(i, j, cov.At(i, j)+w*(p.Cov.At(i, j)+d[i]*d[j]))
			}
		}
	}
	var trace float64
	for i := range s {
		trace += cov.At(i, i)
	}
	addDiagonal(cov, backgroundShrink*trace/float64(s)+Ridge)
	chol, _, err := Cholesky(cov)
	if err != nil {
		return nil, fmt.Errorf("gauss: background: %w", err)
	}
	b := &Background{mean: mean, chol: chol, cov: cov}
	var eig mat.EigenSym
	if !eig.Factorize(cov, true) {
		return nil, fmt.Errorf("gauss: background: eigendecomposition failed: %w", ErrNotPositiveDefinite)
	}
	values := eig.Values(nil) // ascending
	var vectors mat.Dense
	eig.VectorsTo(&vectors)
	var total float64
	for _, v := range values {
		total += v
	}
	// Keep the largest eigenvalues until they hold principalVariance; the
	// rest (ascending, a prefix) span the residual.
	minor, held := s, 0.0
	for minor > 1 && held < principalVariance*total {
		minor--
		held += values[minor]
	}
	b.minor = mat.DenseCopyOf(vectors.Slice(0, s, 0, minor))
	for _, v := range values[:minor] {
		b.minorVariance += v
	}
	return b, nil
}

// Dim returns S.
func (b *Background) Dim() int { return len(b.mean) }

// Mean returns a copy of mu_0.
func (b *Background) Mean() []float64 { return slices.Clone(b.mean) }

// SquaredMahalanobis returns q_0(z) = (z - mu_0)^T Sigma_0^-1 (z - mu_0).
func (b *Background) SquaredMahalanobis(z []float32) float64 {
	d := b.centred(z)
	return whitenedNormSq(b.chol, d)
}

// Residual returns ScoreResidual of z.
func (b *Background) Residual(z []float32) float64 {
	d := mat.NewVecDense(len(b.mean), b.centred(z))
	_, r := b.minor.Dims()
	var proj mat.VecDense
	proj.MulVec(b.minor.T(), d)
	var sum float64
	for i := range r {
		sum += proj.AtVec(i) * proj.AtVec(i)
	}
	return sum / max(b.minorVariance, Ridge)
}

func (b *Background) centred(z []float32) []float64 {
	if len(z) != len(b.mean) {
		panic(fmt.Sprintf("gauss: background: feature of dimension %d, want %d", len(z), len(b.mean)))
	}
	d := make([]float64, len(z))
	for i, v := range z {
		d[i] = float64(v) - b.mean[i]
	}
	return d
}

// OpenSet computes every UnknownScore of an image. It is built once per
// model from the class Gaussians (the background and the class means), the
// classifier tables' bias and the Calibration (temperature and class
// scales), and is read-only and safe for concurrent use afterwards.
type OpenSet struct {
	cal        Calibration
	bias       []float32
	background *Background
	// relative scores the Background as the classifier scores a class.
	relative *Classifier
	means    [][]float64 // centred on mu_0, unit length
	// standard holds (median, 95th percentile - median) of the parts of
	// the sums of standardised scores (standardisedParts) on held-out
	// images: a sum's parts are all there or the sum is NaN.
	standard map[UnknownScore][2]float64
}

// NewOpenSet builds the OpenSet of a model whose classes have the Gaussians
// protos (column c of the scores is protos[c]). background are the
// Gaussians the Background is built from: the classes the model was
// trained on, without classes added later from a few images, so that
// adding classes leaves the feature scores of known images, and hence the
// calibration's thresholds, unchanged. bias is the tables' b_c (nil for
// zeros), cal the model's calibration and opts the classifier's options
// (its shrinkage and normalisation apply to the background too; ages,
// priors and FullGaussian do not).
func NewOpenSet(protos, background []Gaussian, bias []float32, cal Calibration, opts ClassifierOptions) (*OpenSet, error) {
	k := len(protos)
	if len(cal.Scales) != k || (bias != nil && len(bias) != k) {
		return nil, fmt.Errorf("gauss: open set: %d classes, %d scales, %d biases: %w", k, len(cal.Scales), len(bias), ErrShape)
	}
	bg, err := NewBackground(background)
	if err != nil {
		return nil, err
	}
	bgOpts := ClassifierOptions{Shrink: opts.Shrink, Normalize: opts.Normalize, OffDiagShrink: opts.OffDiagShrink}
	relative, err := NewClassifier([]Gaussian{{Mean: bg.mean, Cov: bg.cov}}, nil, bgOpts)
	if err != nil {
		return nil, fmt.Errorf("gauss: open set: background: %w", err)
	}
	o := &OpenSet{cal: cal, bias: bias, background: bg, relative: relative, means: make([][]float64, k)}
	o.setStandard()
	for c, p := range protos {
		if p.Dim() != bg.Dim() {
			return nil, fmt.Errorf("gauss: open set: class %d has dimension %d, the background %d: %w", c, p.Dim(), bg.Dim(), ErrShape)
		}
		m := make([]float64, bg.Dim())
		for i, v := range p.Mean {
			m[i] = v - bg.mean[i]
		}
		normalizeL2(m)
		o.means[c] = m
	}
	return o, nil
}

// setStandard reads the standardisation of the sums' parts from the
// calibration's references (the parts it holds).
func (o *OpenSet) setStandard() {
	o.standard = map[UnknownScore][2]float64{}
	for _, parts := range standardisedParts {
		for _, u := range parts {
			if ref, ok := o.cal.reference(u); ok {
				median := quantile(ref, 0.5)
				o.standard[u] = [2]float64{median, max(quantile(ref, 0.95)-median, Ridge)}
			}
		}
	}
}

// standardisedSum is the sum u of its standardised parts; NaN when a part
// has no reference.
func (o *OpenSet) standardisedSum(u UnknownScore, scores, z []float32) float64 {
	var sum float64
	for _, part := range standardisedParts[u] {
		st, ok := o.standard[part]
		if !ok {
			return math.NaN()
		}
		sum += (o.Score(part, scores, z) - st[0]) / st[1]
	}
	return sum
}

// Background returns the model's Background.
func (o *OpenSet) Background() *Background { return o.background }

// Score returns score u of one image from its K classifier scores and its
// backbone feature z, which may be nil when !u.NeedsFeature(). It panics on
// lengths that do not fit the model, or a nil z for a score that needs it.
func (o *OpenSet) Score(u UnknownScore, scores, z []float32) float64 {
	if len(scores) != len(o.means) {
		panic(fmt.Sprintf("gauss: open set: %d scores for %d classes", len(scores), len(o.means)))
	}
	if u.NeedsFeature() && len(z) != o.background.Dim() {
		panic(fmt.Sprintf("gauss: open set: score %s needs a feature of dimension %d, got %d", u, o.background.Dim(), len(z)))
	}
	switch u {
	case ScoreMahalanobis:
		return o.cal.UnknownScore(scores, o.bias)
	case ScoreNearestDistance:
		d := math.Inf(1)
		for c, v := range scores {
			q := float64(v)
			if o.bias != nil {
				q -= float64(o.bias[c])
			}
			d = min(d, max(q, 0))
		}
		return d
	case ScoreRelativeMahalanobis:
		return o.Score(ScoreNearestDistance, scores, nil) - float64(o.relative.Scores(z, 1)[0])
	case ScoreEnergy:
		t := o.cal.Temperature
		logits := make([]float64, len(scores))
		for c, d := range scores {
			logits[c] = -float64(d) / (2 * t)
		}
		return -t * logSumExp(logits)
	case ScoreMaxProbability:
		return 1 - slices.Max(o.cal.Posterior(scores))
	case ScoreResidual:
		return o.background.Residual(z)
	case ScoreViM, ScoreMahalanobisProbabilityResidual:
		return o.standardisedSum(u, scores, z)
	case ScoreCosine:
		d := o.background.centred(z)
		normalizeL2(d)
		best := math.Inf(-1)
		for _, m := range o.means {
			var dot float64
			for i, v := range m {
				dot += v * d[i]
			}
			best = max(best, dot)
		}
		return 1 - best
	}
	panic(fmt.Sprintf("gauss: open set: unknown score %q", u))
}

// References returns, for every UnknownScore, the sorted quantile table of
// its values over n held-out images of known classes (scores [n, K] and
// features [n, S], row-major), from which Calibration.ThresholdOf takes
// any acceptance rate's threshold. With features nil, only the scores that
// do not need them are returned.
func (o *OpenSet) References(scores, features []float32, n int) map[UnknownScore][]float64 {
	k, s := len(o.means), o.background.Dim()
	out := make(map[UnknownScore][]float64)
	// The sums after their parts (UnknownScores' order): they are
	// standardised by the parts' references.
	for _, u := range UnknownScores() {
		if u.NeedsFeature() && features == nil {
			continue
		}
		if _, sum := standardisedParts[u]; sum {
			withRefs := *o
			withRefs.cal.References = out
			withRefs.setStandard()
			o = &withRefs
		}
		v := make([]float64, n)
		for i := range n {
			var z []float32
			if features != nil {
				z = features[i*s : (i+1)*s]
			}
			v[i] = o.Score(u, scores[i*k:(i+1)*k], z)
		}
		slices.Sort(v)
		out[u] = quantileTable(v)
	}
	return out
}

// DefaultUnknownScore is the score a model exported with every score's
// held-out values answers "unknown" by: the best mean AUROC on the
// validation split's shifted and far unknowns, over 3 seeds at the default
// budget (docs/results/openset-kinds; the test split was read once, after
// the choice).
const DefaultUnknownScore = ScoreViM
