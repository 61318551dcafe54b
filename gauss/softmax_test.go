package gauss

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestSoftmaxHeadTables: the softmax head's tables score every class as
// ||zh||^2 minus its logit, with the logit recomputed here from a head
// fitted independently (FitSoftmaxHead on the same samples), so the
// predictions are the head's; on two overlapping Gaussians of unequal
// spread, where the Mahalanobis classifier with shrinkage 3 favours the
// broad class, the head is balanced: its accuracy on fresh samples of each
// class differs by less than the Mahalanobis classifier's.
func TestSoftmaxHeadTables(t *testing.T) {
	const s = 4
	narrow := diagGaussian([]float64{1, 0.2, 0, 0}, 0.05, 0.05, 0.05, 0.05)
	broad := diagGaussian([]float64{0.7, 0.7, 0.1, 0}, 0.6, 0.6, 0.6, 0.6)
	protos := []Gaussian{narrow, broad}
	opts := DefaultClassifierOptions()
	opts.Head = HeadSoftmax
	clf, err := NewClassifier(protos, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	x, y, err := SampleRows(protos, HeadSamples, rand.New(rand.NewPCG(headSeed, 2)))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(x); i += s {
		normalizeL2(x[i : i+s])
	}
	head := FitSoftmaxHead(x, y, len(y), s, 2, headFit)

	rng := rand.New(rand.NewPCG(5, 6))
	var correct, correctMaha [2]float64
	maha, err := NewClassifier(protos, nil, DefaultClassifierOptions())
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	for c, p := range protos {
		z, err := p.Sample(rng, n)
		if err != nil {
			t.Fatal(err)
		}
		scores := clf.Scores(z, n)
		zh := make([]float64, n*s)
		for i, v := range z {
			zh[i] = float64(v)
		}
		for i := range n {
			normalizeL2(zh[i*s : (i+1)*s])
		}
		logits := head.Logits(zh, n)
		for i := range n {
			sq := mat.Dot(mat.NewVecDense(s, zh[i*s:(i+1)*s]), mat.NewVecDense(s, zh[i*s:(i+1)*s]))
			for k := range 2 {
				if want := sq - logits[i*2+k]; math.Abs(float64(scores[i*2+k])-want) > 1e-4*max(1, math.Abs(want)) {
					t.Fatalf("class %d, sample %d, score %d: %v, want ||zh||^2 - logit = %v", c, i, k, scores[i*2+k], want)
				}
			}
		}
		for _, pred := range clf.Predict(z, n, nil) {
			if pred == c {
				correct[c]++
			}
		}
		for _, pred := range maha.Predict(z, n, nil) {
			if pred == c {
				correctMaha[c]++
			}
		}
	}
	gap := math.Abs(correct[0]-correct[1]) / n
	gapMaha := math.Abs(correctMaha[0]-correctMaha[1]) / n
	t.Logf("accuracy per class: softmax head %v, Mahalanobis %v (of %d)", correct, correctMaha, n)
	if gap >= gapMaha {
		t.Errorf("softmax head's accuracy gap between the classes %.3f, want below the Mahalanobis classifier's %.3f", gap, gapMaha)
	}
	many := make([]Gaussian, HeadMaxClasses+1)
	for c := range many {
		many[c] = narrow
	}
	if _, err := NewClassifier(many, nil, opts); !errors.Is(err, ErrShape) {
		t.Errorf("a softmax head of %d classes: error %v, want ErrShape", len(many), err)
	}
}

// BenchmarkSoftmaxTables: the fit of a softmax head over 10 classes of 64
// dimensions (the default job's last classifier), which training repeats
// for every evaluation and export once.
func BenchmarkSoftmaxTables(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	protos := make([]Gaussian, 10)
	for c := range protos {
		protos[c] = randomGaussian(rng, 64)
	}
	for b.Loop() {
		if _, _, err := SoftmaxTables(protos, true); err != nil {
			b.Fatal(err)
		}
	}
}
