package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
)

// scoreValues is one score's value of every record, by set name.
type scoreValues map[string][]float64

// The study's candidate scores beyond gauss.UnknownScores. Each is larger
// for an image more likely unknown.
const (
	// Rotation prediction (Hendrycks et al., NeurIPS 2019): a linear
	// 4-way probe of the quarter turn, fitted on the "fit" half of the
	// validation split (its images and their three turns); the score is
	// the probe's loss summed over the four turns of the image: 4 backbone
	// passes per image. rot-z reads the features, rot-g3 the pooled last
	// conv stage, rot-cat both.
	candRotZ   = "rot-z"
	candRotG3  = "rot-g3"
	candRotCat = "rot-cat"
	// kNN on L2-normalised features (Sun et al., ICML 2022): 1 - the
	// cosine similarity of the k-th nearest reference. knn-gauss's
	// references are knnSamples draws from every stored class Gaussian
	// (exemplar-free); knn-val's the features of the "fit" images.
	candKNNGauss = "knn-gauss-k"
	candKNNVal   = "knn-val-k"
	// knn-g3 is knn-val on the pooled last conv stage.
	candKNNG3 = "knn-g3-k"
	// Per-layer class Gaussians fitted on the "fit" images, scored as the
	// model's classifier scores (its shrinkage and normalisation): the
	// nearest class's distance. maha-z refits the features' Gaussians
	// (against the stored, transported ones), maha-g2 and maha-g3 read the
	// pooled middle and last conv stages.
	candMahaZ  = "maha-z"
	candMahaG2 = "maha-g2"
	candMahaG3 = "maha-g3"
	// ViM's residual (gauss.Background) of the pooled last conv stage,
	// the background built from maha-g3's class Gaussians.
	candResidualG3 = "residual-g3"
	// Minus the L2 norm of the features and of the pooled last stage.
	candNormZ  = "neg-norm-z"
	candNormG3 = "neg-norm-g3"
)

// knnSamples is the number of draws per stored class Gaussian knn-gauss
// compares against; knnKs the neighbours tried.
const knnSamples = 1000

var knnKs = []int{1, 10, 50}

// rotationFeature picks a rotation probe's input of turn q of a record.
type rotationFeature func(r nearRecord, q int) []float32

var rotationFeatures = map[string]rotationFeature{
	candRotZ:   func(r nearRecord, q int) []float32 { return r.Z[q] },
	candRotG3:  func(r nearRecord, q int) []float32 { return r.G3[q] },
	candRotCat: func(r nearRecord, q int) []float32 { return slices.Concat(r.G3[q], r.Z[q]) },
}

// rotationProbe is a multinomial logistic regression of the quarter turn
// on standardised features.
type rotationProbe struct {
	feat      rotationFeature
	mean, std []float64
	w         [4][]float64
	b         [4]float64
}

// fitRotation fits the probe on every turn of the fit records by full-batch
// gradient descent with momentum (a convex problem: the settings only need
// to converge).
func fitRotation(fit []nearRecord, feat rotationFeature) rotationProbe {
	d := len(feat(fit[0], 0))
	p := rotationProbe{feat: feat, mean: make([]float64, d), std: make([]float64, d)}
	n := 4 * len(fit)
	x := make([][]float64, 0, n)
	y := make([]int, 0, n)
	for _, r := range fit {
		for q := range 4 {
			row := make([]float64, d)
			for i, v := range feat(r, q) {
				row[i] = float64(v)
			}
			x, y = append(x, row), append(y, q)
		}
	}
	for _, row := range x {
		for i, v := range row {
			p.mean[i] += v / float64(n)
		}
	}
	for _, row := range x {
		for i, v := range row {
			p.std[i] += (v - p.mean[i]) * (v - p.mean[i]) / float64(n)
		}
	}
	for i := range p.std {
		p.std[i] = math.Sqrt(p.std[i]) + 1e-6
	}
	for _, row := range x {
		for i := range row {
			row[i] = (row[i] - p.mean[i]) / p.std[i]
		}
	}
	var vw [4][]float64
	var vb [4]float64
	for c := range 4 {
		p.w[c], vw[c] = make([]float64, d), make([]float64, d)
	}
	const lr, momentum, l2, steps = 0.5, 0.9, 1e-4, 300
	gw := [4][]float64{make([]float64, d), make([]float64, d), make([]float64, d), make([]float64, d)}
	for range steps {
		var gb [4]float64
		for c := range 4 {
			clear(gw[c])
		}
		for j, row := range x {
			pr := p.probabilities(row)
			for c := range 4 {
				g := pr[c]
				if c == y[j] {
					g--
				}
				g /= float64(n)
				gb[c] += g
				for i, v := range row {
					gw[c][i] += g * v
				}
			}
		}
		for c := range 4 {
			for i := range gw[c] {
				vw[c][i] = momentum*vw[c][i] - lr*(gw[c][i]+l2*p.w[c][i])
				p.w[c][i] += vw[c][i]
			}
			vb[c] = momentum*vb[c] - lr*gb[c]
			p.b[c] += vb[c]
		}
	}
	return p
}

func (p rotationProbe) probabilities(row []float64) [4]float64 {
	var logit [4]float64
	for c := range 4 {
		logit[c] = p.b[c]
		for i, v := range row {
			logit[c] += p.w[c][i] * v
		}
	}
	m := slices.Max(logit[:])
	var sum float64
	for c := range 4 {
		logit[c] = math.Exp(logit[c] - m)
		sum += logit[c]
	}
	for c := range 4 {
		logit[c] /= sum
	}
	return logit
}

// loss is the probe's cross-entropy summed over the record's four turns.
func (p rotationProbe) loss(r nearRecord) float64 {
	var l float64
	for q := range 4 {
		f := p.feat(r, q)
		row := make([]float64, len(f))
		for i, v := range f {
			row[i] = (float64(v) - p.mean[i]) / p.std[i]
		}
		l -= math.Log(max(p.probabilities(row)[q], 1e-12))
	}
	return l
}

// knnScores returns, for every k of knnKs, 1 - the cosine similarity of
// z to its k-th nearest reference (refs L2-normalised, [n, s]).
func knnScores(z []float32, refs []float32, s int) []float64 {
	q := normalised(z)
	kmax := slices.Max(knnKs)
	top := make([]float32, 0, kmax) // descending similarities
	for j := 0; j+s <= len(refs); j += s {
		var dot float32
		for i, v := range refs[j : j+s] {
			dot += v * q[i]
		}
		if len(top) == kmax && dot <= top[kmax-1] {
			continue
		}
		at, _ := slices.BinarySearchFunc(top, dot, func(a, b float32) int {
			switch {
			case a > b:
				return -1
			case a < b:
				return 1
			}
			return 0
		})
		if len(top) < kmax {
			top = append(top, 0)
		}
		copy(top[at+1:], top[at:len(top)-1])
		top[at] = dot
	}
	out := make([]float64, len(knnKs))
	for i, k := range knnKs {
		out[i] = 1 - float64(top[min(k, len(top))-1])
	}
	return out
}

func normalised(z []float32) []float32 {
	var ss float64
	for _, v := range z {
		ss += float64(v) * float64(v)
	}
	n := float32(math.Sqrt(ss) + 1e-12)
	out := make([]float32, len(z))
	for i, v := range z {
		out[i] = v / n
	}
	return out
}

func norm(z []float32) float64 {
	var ss float64
	for _, v := range z {
		ss += float64(v) * float64(v)
	}
	return math.Sqrt(ss)
}

// layerGaussians fits one Gaussian per label of the fit records' layer and
// returns the classifier of the model's options over them.
func layerGaussians(fit []nearRecord, layer func(nearRecord) []float32, opts gauss.ClassifierOptions) (*gauss.Classifier, []gauss.Gaussian, error) {
	byLabel := map[int][]float32{}
	for _, r := range fit {
		byLabel[r.Label] = append(byLabel[r.Label], layer(r)...)
	}
	s := len(layer(fit[0]))
	var protos []gauss.Gaussian
	for _, label := range slices.Sorted(mapsKeys(byLabel)) {
		g, err := gauss.Estimate(byLabel[label], len(byLabel[label])/s, s)
		if err != nil {
			return nil, nil, fmt.Errorf("label %d: %w", label, err)
		}
		protos = append(protos, g)
	}
	clf, err := gauss.NewClassifier(protos, nil, gauss.ClassifierOptions{Shrink: opts.Shrink, Normalize: opts.Normalize})
	return clf, protos, err
}

func mapsKeys(m map[int][]float32) func(func(int) bool) {
	return func(yield func(int) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// nearScoreSet computes every candidate score of every record of one seed,
// and the Go-side time per image of each family (the backbone passes are
// timed apart).
func nearScoreSet(nf nearFeatures, model string, seed int) (map[string]scoreValues, map[string]time.Duration, error) {
	ns := newNearScores(nf)
	fit := nf.Sets["fit"]
	for j, u := range gauss.UnknownScores() {
		if j >= len(fit[0].Scores) {
			break // features cached by a build with fewer scores
		}
		ns.each("", func(s string, i int, r nearRecord) { ns.put(string(u), s, i, r.Scores[j]) })
	}
	for name, feat := range rotationFeatures {
		p := fitRotation(fit, feat)
		ns.each(name, func(s string, i int, r nearRecord) { ns.put(name, s, i, p.loss(r)) })
	}
	b, err := bundle.Open(model)
	if err != nil {
		return nil, nil, err
	}
	if err := ns.addKNN(b, seed); err != nil {
		return nil, nil, err
	}
	if err := ns.addLayers(b.Manifest.Classifier); err != nil {
		return nil, nil, err
	}
	ns.each("", func(s string, i int, r nearRecord) {
		ns.put(candNormZ, s, i, -norm(r.Z[0]))
		ns.put(candNormG3, s, i, -norm(r.G3[0]))
	})
	return ns.out, ns.cost, nil
}

// nearScores collects the candidate scores of one seed's records (out, by
// score and set) and the Go-side time per image of each family (cost).
type nearScores struct {
	nf     nearFeatures
	sets   []string
	images int
	out    map[string]scoreValues
	cost   map[string]time.Duration
}

func newNearScores(nf nearFeatures) *nearScores {
	ns := &nearScores{nf: nf, out: map[string]scoreValues{}, cost: map[string]time.Duration{}}
	for k := range nf.Sets {
		ns.sets = append(ns.sets, k)
	}
	slices.Sort(ns.sets)
	for _, s := range ns.sets {
		ns.images += len(nf.Sets[s])
	}
	return ns
}

func (ns *nearScores) put(name, set string, i int, v float64) {
	if ns.out[name] == nil {
		ns.out[name] = scoreValues{}
	}
	if ns.out[name][set] == nil {
		ns.out[name][set] = make([]float64, len(ns.nf.Sets[set]))
	}
	ns.out[name][set][i] = v
}

// each calls f on every record of every set; a non-empty family keeps the
// time per image as that family's cost.
func (ns *nearScores) each(family string, f func(set string, i int, r nearRecord)) {
	start := time.Now()
	for _, s := range ns.sets {
		for i, r := range ns.nf.Sets[s] {
			f(s, i, r)
		}
	}
	if family != "" {
		ns.cost[family] = time.Since(start) / time.Duration(ns.images)
	}
}

// addKNN scores kNN on normalised features against samples of the stored
// Gaussians and against the fit half's features (final and stage 3).
func (ns *nearScores) addKNN(b *bundle.Bundle, seed int) error {
	dim := b.Manifest.FeatureDim
	rng := rand.New(rand.NewPCG(uint64(seed), 45))
	var sampled []float32
	for _, g := range b.Prototypes.Gaussians() {
		x, err := g.Sample(rng, knnSamples)
		if err != nil {
			return err
		}
		for i := 0; i < len(x); i += dim {
			sampled = append(sampled, normalised(x[i:i+dim])...)
		}
	}
	var fitRefs, fitG3 []float32
	for _, r := range ns.nf.Sets["fit"] {
		fitRefs = append(fitRefs, normalised(r.Z[0])...)
		fitG3 = append(fitG3, normalised(r.G3[0])...)
	}
	z := func(r nearRecord) []float32 { return r.Z[0] }
	for _, ref := range []struct {
		name string
		refs []float32
		of   func(nearRecord) []float32
	}{{candKNNGauss, sampled, z}, {candKNNVal, fitRefs, z}, {candKNNG3, fitG3, func(r nearRecord) []float32 { return r.G3[0] }}} {
		ns.each(ref.name, func(s string, i int, r nearRecord) {
			f := ref.of(r)
			for ki, v := range knnScores(f, ref.refs, len(f)) {
				ns.put(fmt.Sprintf("%s%d", ref.name, knnKs[ki]), s, i, v)
			}
		})
	}
	return nil
}

// addLayers scores class Gaussians fitted per layer (features, stage 2,
// stage 3) on the fit half, and the residual of stage 3.
func (ns *nearScores) addLayers(opts gauss.ClassifierOptions) error {
	fit := ns.nf.Sets["fit"]
	for _, layer := range []struct {
		name string
		of   func(nearRecord) []float32
	}{{candMahaZ, func(r nearRecord) []float32 { return r.Z[0] }},
		{candMahaG2, func(r nearRecord) []float32 { return r.G2 }},
		{candMahaG3, func(r nearRecord) []float32 { return r.G3[0] }}} {
		clf, lp, err := layerGaussians(fit, layer.of, opts)
		if err != nil {
			return fmt.Errorf("%s: %w", layer.name, err)
		}
		ns.each(layer.name, func(s string, i int, r nearRecord) {
			ns.put(layer.name, s, i, float64(slices.Min(clf.Scores(layer.of(r), 1))))
		})
		if layer.name == candMahaG3 {
			bg, err := gauss.NewBackground(lp)
			if err != nil {
				return err
			}
			ns.each(candResidualG3, func(s string, i int, r nearRecord) { ns.put(candResidualG3, s, i, bg.Residual(r.G3[0])) })
		}
	}
	return nil
}

// standardised is v standardised by the "ref" set's values as ScoreViM
// standardises its parts: (v - median) / (95th percentile - median).
func standardised(v scoreValues) scoreValues {
	ref := slices.Sorted(slices.Values(v["ref"]))
	med := ref[len(ref)/2]
	scale := max(ref[min(len(ref)-1, int(0.95*float64(len(ref))))]-med, 1e-9)
	out := scoreValues{}
	for s, vals := range v {
		o := make([]float64, len(vals))
		for i, x := range vals {
			o[i] = (x - med) / scale
		}
		out[s] = o
	}
	return out
}

// combinationPool are the scores the study sums, standardised, in pairs
// and triples.
var combinationPool = []string{
	string(gauss.ScoreMahalanobis), string(gauss.ScoreEnergy), string(gauss.ScoreMaxProbability),
	string(gauss.ScoreResidual), string(gauss.ScoreViM),
	candRotCat, candKNNGauss + "10", candKNNVal + "10", candKNNG3 + "10",
	candMahaZ, candMahaG2, candMahaG3, candResidualG3,
}

// combinationName names the sum of standardised scores.
func combinationName(parts []string) string { return "sum(" + strings.Join(parts, "+") + ")" }

// addCombinations adds every pair and triple of combinationPool to scores.
func addCombinations(scores map[string]scoreValues) {
	std := map[string]scoreValues{}
	for _, name := range combinationPool {
		std[name] = standardised(scores[name])
	}
	var combos [][]string
	p := combinationPool
	for i := range p {
		for j := i + 1; j < len(p); j++ {
			combos = append(combos, []string{p[i], p[j]})
			for k := j + 1; k < len(p); k++ {
				combos = append(combos, []string{p[i], p[j], p[k]})
			}
		}
	}
	for _, c := range combos {
		sum := scoreValues{}
		for s, v := range std[c[0]] {
			o := slices.Clone(v)
			for _, part := range c[1:] {
				for i, x := range std[part][s] {
					o[i] += x
				}
			}
			sum[s] = o
		}
		scores[combinationName(c)] = sum
	}
}
