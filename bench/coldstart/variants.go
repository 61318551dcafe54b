package main

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/bicyc/bicyc/gauss"
)

// input is what a variant scores after one task: the prototypes of the
// seen classes (class ids, ages), and z, the features of the split's images
// ([2n, S]: n images, then their mirrors) with their labels.
type input struct {
	protos []gauss.Gaussian
	ids    []int
	ages   []int
	tasks  [][]int
	z      []float32
	n, s   int
	labels []int
	seed   uint64
	memo   map[string][]float32 // scores shared by variants within one checkpoint (see memoized)
}

// memoized returns the scores under key, computing them with f the first
// time in this checkpoint: a variant that combines other classifiers' scores
// (mixScores) fits each of them once per checkpoint, not once per variant.
// The returned slice is shared: callers copy before changing it.
func memoized(in input, key string, f func() ([]float32, error)) ([]float32, error) {
	if s, ok := in.memo[key]; ok {
		return s, nil
	}
	s, err := f()
	if err != nil {
		return nil, err
	}
	if in.memo != nil {
		in.memo[key] = s
	}
	return s, nil
}

// variant scores the n images against the K classes: [n, K], smaller is
// closer.
type variant struct {
	name  string
	score func(input) ([]float32, error)
}

func variants() []variant {
	var vs []variant
	opt := func(name string, shrink, ageBias float64, flip bool, mod func(*gauss.ClassifierOptions)) {
		vs = append(vs, variant{name, func(in input) ([]float32, error) {
			o := gauss.DefaultClassifierOptions()
			o.Shrink, o.AgeBias = shrink, ageBias
			if mod != nil {
				mod(&o)
			}
			return optionScores(in, o, flip)
		}})
	}
	opt("default", 3, 0, false, nil)
	opt("flip", 3, 0, true, nil)
	for _, g := range []float64{0.25, 0.5, 1, 2} {
		opt(fmt.Sprintf("shrink%g", g), g, 0, false, nil)
		opt(fmt.Sprintf("shrink%g+flip", g), g, 0, true, nil)
	}
	for _, b := range []float64{-0.01, 0.005, 0.01} {
		opt(fmt.Sprintf("shrink0.5+flip+agebias%g", b), 0.5, b, true, nil)
	}
	opt("shrink1+flip+offdiag1", 1, 0, true, func(o *gauss.ClassifierOptions) { o.OffDiagShrink = 1 })
	opt("head-softmax+flip", 3, 0, true, func(o *gauss.ClassifierOptions) { o.Head = gauss.HeadSoftmax })
	opt("head-softmax", 3, 0, false, func(o *gauss.ClassifierOptions) { o.Head = gauss.HeadSoftmax })
	for _, b := range []float64{-0.1, -0.3, -1} {
		opt(fmt.Sprintf("head-softmax+agebias%g", b), 3, b, false, func(o *gauss.ClassifierOptions) { o.Head = gauss.HeadSoftmax })
	}
	opt("shrink1+flip+pool0.2", 1, 0, true, func(o *gauss.ClassifierOptions) { o.PoolCov = 0.2 })
	// Statistics of the transformed features, estimated by Monte Carlo from
	// the stored Gaussians (see transformed).
	for _, p := range []float64{1, 0.5} {
		for _, g := range []float64{0.1, 0.5, 1} {
			vs = append(vs, variant{fmt.Sprintf("mc-pow%g-shrink%g+flip", p, g), func(in input) ([]float32, error) {
				return transformedScores(in, p, g)
			}})
		}
	}
	for _, h := range []softmaxHead{
		{power: 1, wd: 1e-4, normalize: true, samples: 1000, steps: 300, flip: true},
		{power: 1, wd: 1e-4, normalize: true, samples: 1000, steps: 300},
		{power: 1, wd: 0, normalize: true, samples: 1000, steps: 300, flip: true},
		{power: 1, wd: 1e-3, normalize: true, samples: 1000, steps: 300, flip: true},
		{power: 1, wd: 1e-5, normalize: true, samples: 1000, steps: 300, flip: true},
		{power: 0.5, wd: 1e-4, normalize: true, samples: 1000, steps: 300, flip: true},
		{power: 1, wd: 1e-4, samples: 1000, steps: 300, flip: true},
		{power: 1, wd: 1e-4, normalize: true, samples: 3000, steps: 300, flip: true},
		{power: 1, wd: 1e-4, normalize: true, samples: 1000, steps: 1000, flip: true},
		{power: 1, wd: 1e-4, normalize: true, samples: 1000, steps: 300, shrink: 0.5},
		{power: 1, wd: 1e-4, normalize: true, samples: 1000, steps: 300, shrink: 1},
		{power: 1, wd: 1e-3, normalize: true, samples: 1000, steps: 300},
	} {
		vs = append(vs, variant{h.String(), h.scores})
	}
	return append(vs, headFixes()...)
}

// optionScores is gauss.Classifier with options o, on the images alone or
// as the mean of the image's and its mirror's scores.
func optionScores(in input, o gauss.ClassifierOptions, flip bool) ([]float32, error) {
	clf, err := gauss.NewClassifier(in.protos, nil, o.WithAges(in.ages))
	if err != nil {
		return nil, err
	}
	k := clf.Classes()
	if !flip {
		return clf.Scores(in.z[:in.n*in.s], in.n), nil
	}
	s := clf.Scores(in.z, 2*in.n)
	return gauss.MeanScores(s[:in.n*k], s[in.n*k:]), nil
}

// transform maps feature rows in place: x_j <- sign(x_j) |x_j|^power
// (Tukey's ladder of powers, signed because the features are not
// non-negative), then L2 normalisation.
func transform(x []float32, s int, power float64) {
	for i := 0; i < len(x); i += s {
		row := x[i : i+s]
		var norm float64
		for j, v := range row {
			if power != 1 {
				a := math.Pow(math.Abs(float64(v)), power)
				row[j] = float32(math.Copysign(a, float64(v)))
			}
			norm += float64(row[j]) * float64(row[j])
		}
		norm = max(math.Sqrt(norm), gauss.NormEpsilon)
		for j := range row {
			row[j] = float32(float64(row[j]) / norm)
		}
	}
}

// mcSamples is the number of Monte Carlo samples per class.
const mcSamples = 4000

// samples draws count rows from every prototype and transforms them.
func samples(in input, power float64, count int) ([][]float32, error) {
	rng := rand.New(rand.NewPCG(in.seed, 48))
	out := make([][]float32, len(in.protos))
	for c, p := range in.protos {
		x, err := p.Sample(rng, count)
		if err != nil {
			return nil, fmt.Errorf("class %d: %w", in.ids[c], err)
		}
		transform(x, in.s, power)
		out[c] = x
	}
	return out, nil
}

// transformedScores: each class's Gaussian is re-estimated in the space of
// transformed (power, then L2-normalised) features from samples of its
// stored Gaussian, and images are scored there by the Mahalanobis distance
// with shrinkage, without the correlation step (the features and the
// statistics now live in the same space).
func transformedScores(in input, power, shrink float64) ([]float32, error) {
	xs, err := samples(in, power, mcSamples)
	if err != nil {
		return nil, err
	}
	protos := make([]gauss.Gaussian, len(xs))
	for c, x := range xs {
		if protos[c], err = gauss.Estimate(x, mcSamples, in.s); err != nil {
			return nil, err
		}
	}
	z := append([]float32(nil), in.z...)
	transform(z, in.s, power)
	o := gauss.DefaultClassifierOptions()
	o.Shrink, o.Normalize = shrink, false
	return optionScores(input{protos: protos, ids: in.ids, ages: in.ages, z: z, n: in.n, s: in.s}, o, true)
}

// softmaxHead is a linear softmax classifier (with bias, L2 weight decay
// wd) trained on samples of every class's Gaussian (prototype replay for the
// head: the classes balanced, no image stored), on transformed features
// (signed power, then L2 normalisation when normalize); images are scored by
// the negative log-probability, with flip averaged with the mirror's.
type softmaxHead struct {
	power, wd       float64
	shrink          float64 // samples drawn from Sigma + shrink*tr(Sigma)/S*I
	normalize, flip bool
	samples, steps  int
}

func (h softmaxHead) String() string {
	s := fmt.Sprintf("softmax-gs-pow%g-wd%g", h.power, h.wd)
	if !h.normalize {
		s += "-raw"
	}
	if h.shrink != 0 {
		s += fmt.Sprintf("-shrink%g", h.shrink)
	}
	if h.samples != 1000 {
		s += fmt.Sprintf("-n%d", h.samples)
	}
	if h.steps != 300 {
		s += fmt.Sprintf("-steps%d", h.steps)
	}
	if h.flip {
		s += "+flip"
	}
	return s
}

func (h softmaxHead) transform(x []float32, s int) {
	if h.normalize {
		transform(x, s, h.power)
		return
	}
	if h.power != 1 {
		for j, v := range x {
			x[j] = float32(math.Copysign(math.Pow(math.Abs(float64(v)), h.power), float64(v)))
		}
	}
}

func (h softmaxHead) scores(in input) ([]float32, error) {
	rng := rand.New(rand.NewPCG(in.seed, 48))
	k, s := len(in.protos), in.s
	m := k * h.samples
	x := make([]float64, 0, m*s)
	y := make([]int, 0, m)
	for c, p := range in.protos {
		if h.shrink != 0 {
			p = gauss.Gaussian{Mean: p.Mean, Cov: gauss.Shrink(p.Cov, h.shrink)}
		}
		xc, err := p.Sample(rng, h.samples)
		if err != nil {
			return nil, fmt.Errorf("class %d: %w", in.ids[c], err)
		}
		h.transform(xc, s)
		for _, v := range xc {
			x = append(x, float64(v))
		}
		for range h.samples {
			y = append(y, c)
		}
	}
	var scale float64 = 1
	if !h.normalize {
		// Raw features: standardise the scale by the samples' RMS norm.
		var ss float64
		for _, v := range x {
			ss += v * v
		}
		scale = 1 / math.Sqrt(ss/float64(m))
		for j := range x {
			x[j] *= scale
		}
	}
	w := fitSoftmax(x, y, m, s, k, h.wd, h.steps)
	z := append([]float32(nil), in.z...)
	h.transform(z, s)
	rows := in.n
	if h.flip {
		rows *= 2
	}
	out := make([]float32, in.n*k)
	logits := make([]float64, k)
	for i := range rows {
		row := z[i*s : (i+1)*s]
		for c := range k {
			a := w[k*s+c]
			for j, v := range row {
				a += w[c*s+j] * float64(v) * scale
			}
			logits[c] = a
		}
		lse := logSumExp(logits)
		for c := range k {
			out[(i%in.n)*k+c] += float32((lse - logits[c]) * float64(in.n) / float64(rows))
		}
	}
	return out, nil
}

func logSumExp(v []float64) float64 {
	m := v[0]
	for _, a := range v {
		m = max(m, a)
	}
	var sum float64
	for _, a := range v {
		sum += math.Exp(a - m)
	}
	return m + math.Log(sum)
}

// fitSoftmax is gauss.FitSoftmaxHead, its weights [k, s] then biases [k].
func fitSoftmax(x []float64, y []int, m, s, k int, wd float64, steps int) []float64 {
	h := gauss.FitSoftmaxHead(x, y, m, s, k, gauss.SoftmaxFit{WeightDecay: wd, Steps: steps})
	return append(h.W, h.B...)
}
