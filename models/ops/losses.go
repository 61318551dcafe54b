package ops

import (
	"fmt"

	G "gorgonia.org/gorgonia"
)

// CrossEntropy is the mean softmax cross-entropy of logits [B,K] against
// one-hot targets [B,K], built from gorgonia's ops (the loss of Stage I and
// of rehearsal):
//
//	CE = -(1/B) sum_b sum_k onehot[b,k] * log softmax(logits)[b,k]
func CrossEntropy(logits, onehot *G.Node) (*G.Node, error) {
	logp, err := G.LogSoftMax(logits)
	if err != nil {
		return nil, fmt.Errorf("cross-entropy: %w", err)
	}
	picked, err := G.HadamardProd(logp, onehot)
	if err != nil {
		return nil, fmt.Errorf("cross-entropy: %w", err)
	}
	sum, err := G.Sum(picked)
	if err != nil {
		return nil, err
	}
	return G.Mul(sum, G.NewConstant(float32(-1)/float32(logits.Shape()[0])))
}

// MeanSquaredError is the mean squared error of a and b over all their
// elements, built from gorgonia's ops: for features [B,S], the mean over the
// batch and S (docs/method.md: every MSE of BiCyc's losses is one).
func MeanSquaredError(a, b *G.Node) (*G.Node, error) {
	d, err := G.Sub(a, b)
	if err != nil {
		return nil, fmt.Errorf("mse %v vs %v: %w", a.Shape(), b.Shape(), err)
	}
	sq, err := G.Square(d)
	if err != nil {
		return nil, err
	}
	return G.Mean(sq)
}
