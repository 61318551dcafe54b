package export

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/export/classgraph"
	"github.com/bicyc/bicyc/gauss"
)

// randomGaussians draws k prototypes with means N(0, 1) and covariances
// A A^T / S + 0.1 I, A standard normal, so each is well conditioned but
// far from isotropic.
func randomGaussians(rng *rand.Rand, k, s int) []gauss.Gaussian {
	protos := make([]gauss.Gaussian, k)
	for c := range protos {
		mean := make([]float64, s)
		for i := range mean {
			mean[i] = rng.NormFloat64()
		}
		a := mat.NewDense(s, s, nil)
		for i := range s {
			for j := range s {
				a.Set(i, j, rng.NormFloat64())
			}
		}
		cov := mat.NewSymDense(s, nil)
		cov.SymOuterK(1/float64(s), a)
		for i := range s {
			cov.SetSym(i, i, cov.At(i, i)+0.1)
		}
		protos[c] = gauss.Gaussian{Mean: mean, Cov: cov}
	}
	return protos
}

// TestClassifierMatchesGauss checks the exported graph against
// gauss.Classifier.Scores, the scores training evaluation reports, for the
// published options and both variations.
func TestClassifierMatchesGauss(t *testing.T) {
	const n, k, s = 16, 10, 8
	rng := rand.New(rand.NewPCG(21, 22))
	protos := randomGaussians(rng, k, s)
	z := make([]float32, n*s)
	for i := range z {
		z[i] = float32(rng.NormFloat64() + protos[i/s%k].Mean[i%s])
	}
	for i, opts := range []gauss.ClassifierOptions{
		gauss.DefaultClassifierOptions(),
		{Shrink: 0, Normalize: false},
		{Shrink: 1, Normalize: true, FullGaussian: true},
	} {
		c, err := gauss.NewClassifier(protos, nil, opts)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		model, err := classgraph.Classifier(c.Tables())
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		outs := runModel(t, model, []string{bundle.TensorFeatures}, [][]float32{z}, [][]int64{{n, s}},
			[]string{bundle.TensorScores})
		want := make([]float64, n*k)
		for j, v := range c.Scores(z, n) {
			want[j] = float64(v)
		}
		checkScores(t, fmt.Sprintf("case %d %+v", i, opts), outs, want, n, k)
		pred := c.Predict(z, n, nil)
		scores := outs[0].([]float32)
		for r := range n {
			if best := argmin(scores[r*k : (r+1)*k]); best != pred[r] {
				t.Errorf("case %d: row %d: onnx best class %d, gauss predicts %d", i, r, best, pred[r])
			}
		}
	}
}
