package main

import (
	"fmt"

	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/train"
)

// oracleDiagnostics prints, at the last checkpoint, how far classifiers that
// read the training images of every class (old ones included, which an
// exemplar-free method may not keep) get on the same features: the ceiling
// of the feature space, not a method.
//
//   - oracle-qda: Gaussians estimated from the real training features under
//     the final backbone (mirrors left out), default classifier options.
//   - oracle-softmax: a linear softmax fitted on those features (L2
//     normalised), scored as softmaxScores does.
func oracleDiagnostics(run *train.Run, in input) error {
	x, labels, err := run.OracleTrainingFeatures(len(in.tasks))
	if err != nil {
		return err
	}
	pos := map[int]int{}
	for i, c := range in.ids {
		pos[c] = i
	}
	k, s := len(in.ids), in.s
	byClass := make([][]float32, k)
	for i, c := range labels {
		byClass[pos[c]] = append(byClass[pos[c]], x[i*s:(i+1)*s]...)
	}
	protos := make([]gauss.Gaussian, k)
	for c, xc := range byClass {
		if protos[c], err = gauss.Estimate(xc, len(xc)/s, s); err != nil {
			return err
		}
	}
	q := in
	q.protos = protos
	scores, err := optionScores(q, gauss.DefaultClassifierOptions(), false)
	if err != nil {
		return err
	}
	report("oracle-qda (real statistics, default classifier)", in, scores)
	o := gauss.DefaultClassifierOptions()
	o.Shrink = 0.5
	if scores, err = optionScores(q, o, true); err != nil {
		return err
	}
	report("oracle-qda (real statistics, shrink 0.5 + flip)", in, scores)
	// Linear softmax on the real features.
	xn := append([]float32(nil), x...)
	transform(xn, s, 1)
	xf := make([]float64, len(xn))
	for i, v := range xn {
		xf[i] = float64(v)
	}
	y := make([]int, len(labels))
	for i, c := range labels {
		y[i] = pos[c]
	}
	w := fitSoftmax(xf, y, len(y), s, k, 1e-4, 300)
	z := append([]float32(nil), in.z...)
	transform(z, s, 1)
	out := make([]float32, in.n*k)
	logits := make([]float64, k)
	for i := range 2 * in.n {
		row := z[i*s : (i+1)*s]
		for c := range k {
			a := w[k*s+c]
			for j, v := range row {
				a += w[c*s+j] * float64(v)
			}
			logits[c] = a
		}
		lse := logSumExp(logits)
		for c := range k {
			out[(i%in.n)*k+c] += float32((lse - logits[c]) / 2)
		}
	}
	report("oracle-softmax (real features, L2-normalised, + flip)", in, out)
	return nil
}

func report(name string, in input, scores []float32) {
	tag, taw := accuracies(in, scores)
	var ag, aw, n float64
	for u := range tag {
		k := float64(len(in.tasks[u]))
		ag += k * tag[u]
		aw += k * taw[u]
		n += k
	}
	per := make([]float64, len(tag))
	for u := range tag {
		per[u] = 100 * tag[u]
	}
	fmt.Printf("ORACLE %-55s A_last %6.2f  TAw %6.2f  per task %s\n", name, 100*ag/n, 100*aw/n, pct(per))
}
