package main

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/bicyc/bicyc/gauss"
)

// headFixes are the classifier-side attempts to keep the softmax head's
// gain without its forgetting on class order 2 (docs/results/cold-start.md,
// "Classifier side: fixing the head on order 2"). Each acts on the stored
// prototypes alone: no image of an old task is read.
func headFixes() []variant {
	softmax := func(o *gauss.ClassifierOptions) { o.Head = gauss.HeadSoftmax }
	var vs []variant
	// The head's and the Gaussian classifier's scores added: the Gaussian
	// score is a squared Mahalanobis distance, the head's a negative logit,
	// so lambda sets the Gaussian classifier's weight (a temperature of
	// one against the other).
	mix := func(l, b float64) {
		name := fmt.Sprintf("head-softmax+mixG%g", l)
		if b != 0 {
			name += fmt.Sprintf("+agebias%g", b)
		}
		for _, v := range vs {
			if v.name == name {
				return
			}
		}
		vs = append(vs, variant{name, func(in input) ([]float32, error) {
			return mixScores(in, l, b)
		}})
	}
	for _, l := range []float64{0.03, 0.1, 0.3, 1, 3, 10, 30, 100} {
		mix(l, 0)
		mix(l, -0.3)
	}
	// The fourth round's frontier (docs/results/cold-start.md, "Fourth
	// round"): lambda x age bias, chosen on validation across two orders.
	for _, l := range mixFrontierLambdas {
		for _, b := range mixFrontierAgeBiases {
			mix(l, b)
		}
	}
	// The head fitted on samples whose covariance changes with the class's
	// age: Sigma_c (1 + a*age_c) (inflate), or Sigma_c / (1 + a*age_c)
	// (deflate). An old class's stored Gaussian has been carried through
	// every later task's transport, so where its images now lie is less
	// certain than for a new class (inflate); deflate tests the opposite.
	scaled := func(name string, factor func(age int) float64) variant {
		return variant{name, func(in input) ([]float32, error) {
			protos := make([]gauss.Gaussian, len(in.protos))
			for c, p := range in.protos {
				var cov mat.SymDense
				cov.ScaleSym(factor(in.ages[c]), p.Cov)
				protos[c] = gauss.Gaussian{Mean: p.Mean, Cov: &cov}
			}
			o := gauss.DefaultClassifierOptions()
			softmax(&o)
			return optionScores(input{protos: protos, ids: in.ids, ages: in.ages, z: in.z, n: in.n, s: in.s}, o, false)
		}}
	}
	for _, a := range []float64{0.25, 0.5, 1, 2} {
		vs = append(vs, scaled(fmt.Sprintf("head-softmax+ageinflate%g", a), func(age int) float64 { return 1 + a*float64(age) }))
		vs = append(vs, scaled(fmt.Sprintf("head-softmax+agedeflate%g", a), func(age int) float64 { return 1 / (1 + a*float64(age)) }))
	}
	for _, f := range []float64{0.5, 2} {
		vs = append(vs, scaled(fmt.Sprintf("head-softmax+covscale%g", f), func(int) float64 { return f }))
	}
	// A bias per task, fitted after the head on a second, held-out draw of
	// samples of the stored Gaussians (cross-entropy, full batch).
	vs = append(vs, variant{"head-softmax+taskcal", func(in input) ([]float32, error) {
		return taskCalibrated(in)
	}})
	vs = append(vs, variant{"head-softmax+taskbalanced", taskBalanced})
	return vs
}

// taskBalanced is the softmax head fitted with every task, not every
// class, weighted alike: a class of a task of n classes gets
// gauss.HeadSamples * 2 / n samples (the same as the head's where every
// task has 2 classes, so it differs only with a first task of 4).
func taskBalanced(in input) ([]float32, error) {
	rng := rand.New(rand.NewPCG(in.seed, 4849))
	size := map[int]int{}
	for _, cs := range in.tasks {
		for _, id := range cs {
			size[id] = len(cs)
		}
	}
	k, s := len(in.protos), in.s
	var x []float64
	var y []int
	for c, p := range in.protos {
		count := gauss.HeadSamples * 2 / size[in.ids[c]]
		xc, err := p.Sample(rng, count)
		if err != nil {
			return nil, fmt.Errorf("class %d: %w", in.ids[c], err)
		}
		transform(xc, s, 1)
		for _, v := range xc {
			x = append(x, float64(v))
		}
		for range count {
			y = append(y, c)
		}
	}
	h := gauss.FitSoftmaxHead(x, y, len(y), s, k, gauss.SoftmaxFit{WeightDecay: 1e-4, Steps: 300})
	z := make([]float64, in.n*s)
	for i, v := range in.z[:in.n*s] {
		z[i] = float64(v)
	}
	for i := 0; i < len(z); i += s {
		var norm float64
		for _, v := range z[i : i+s] {
			norm += v * v
		}
		norm = max(math.Sqrt(norm), gauss.NormEpsilon)
		for j := i; j < i+s; j++ {
			z[j] /= norm
		}
	}
	logits := h.Logits(z, in.n)
	out := make([]float32, len(logits))
	for i, v := range logits {
		out[i] = float32(-v)
	}
	return out, nil
}

// The fourth round's grid of mixScores settings.
var (
	mixFrontierLambdas   = []float64{1, 2, 3, 5, 10, 20}
	mixFrontierAgeBiases = []float64{0, -0.1, -0.2, -0.3, -0.4, -0.5}
)

// mixScores is the product's classifier.gaussian_weight (gauss's one
// definition: the softmax head's score with age bias b plus lambda times the
// default Gaussian classifier's), assembled from its two parts so that the
// head and the Gaussian classifier are fitted once per checkpoint (memoized)
// and shared by every (lambda, b) of the grid. TestMixScoresIsTheProductOption
// holds it to gauss's.
func mixScores(in input, lambda, b float64) ([]float32, error) {
	head, err := memoized(in, "head-softmax", func() ([]float32, error) {
		o := gauss.DefaultClassifierOptions()
		o.Head = gauss.HeadSoftmax
		return optionScores(in, o, false)
	})
	if err != nil {
		return nil, err
	}
	g, err := memoized(in, "default", func() ([]float32, error) {
		return optionScores(in, gauss.DefaultClassifierOptions(), false)
	})
	if err != nil {
		return nil, err
	}
	k := len(in.ids)
	out := make([]float32, len(head))
	for i := range out {
		out[i] = head[i] + float32(b*float64(in.ages[i%k])) + float32(lambda)*g[i]
	}
	return out, nil
}

// calSamples is the held-out draw per class for taskCalibrated.
const calSamples = 1000

// taskCalibrated fits the softmax head, then one additive score per task
// minimising the cross-entropy of a fresh draw from every class's stored
// Gaussian (its own random stream, not the head's), and scores the images
// with it.
func taskCalibrated(in input) ([]float32, error) {
	o := gauss.DefaultClassifierOptions()
	o.Head = gauss.HeadSoftmax
	clf, err := gauss.NewClassifier(in.protos, nil, o.WithAges(in.ages))
	if err != nil {
		return nil, err
	}
	k := clf.Classes()
	rng := rand.New(rand.NewPCG(in.seed, 4848))
	var x []float32
	var y []int
	for c, p := range in.protos {
		xc, err := p.Sample(rng, calSamples)
		if err != nil {
			return nil, fmt.Errorf("class %d: %w", in.ids[c], err)
		}
		x = append(x, xc...)
		for range calSamples {
			y = append(y, c)
		}
	}
	// The score is the negative logit plus a term the same for every
	// class; the calibrated logit of class c is -score_c - bias[task(c)].
	s := clf.Scores(x, len(y))
	taskOf := make([]int, k)
	pos := map[int]int{}
	for c, id := range in.ids {
		pos[id] = c
	}
	for u, cs := range in.tasks {
		for _, id := range cs {
			taskOf[pos[id]] = u
		}
	}
	bias := make([]float64, len(in.tasks))
	grad := make([]float64, len(bias))
	logits := make([]float64, k)
	const lr = 0.5
	for range 200 {
		clear(grad)
		for i, want := range y {
			for c := range k {
				logits[c] = -float64(s[i*k+c]) - bias[taskOf[c]]
			}
			lse := logSumExp(logits)
			for c := range k {
				// d CE / d bias = -(p_c - 1[c = want]) summed over the task's classes
				p := math.Exp(logits[c] - lse)
				if c == want {
					p--
				}
				grad[taskOf[c]] -= p / float64(len(y))
			}
		}
		for u := range bias {
			bias[u] -= lr * grad[u]
		}
	}
	out := clf.Scores(in.z[:in.n*in.s], in.n)
	for i := range in.n {
		for c := range k {
			out[i*k+c] += float32(bias[taskOf[c]])
		}
	}
	return out, nil
}
