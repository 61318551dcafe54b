package train

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// cosineMatrix is the matrix of pairwise cosine similarities of the first
// rows rows of x [B,S]: C = Xn Xn^T with Xn the L2-normalised rows. The
// norm has a small floor so the gradient stays finite at zero.
func cosineMatrix(x *G.Node, rows int) (*G.Node, error) {
	if b := x.Shape()[0]; rows < b {
		var err error
		if x, err = G.Slice(x, G.S(0, rows)); err != nil {
			return nil, err
		}
	}
	sq, err := G.Square(x)
	if err != nil {
		return nil, err
	}
	ss, err := G.Sum(sq, 1)
	if err != nil {
		return nil, err
	}
	ss, err = G.Add(ss, G.NewConstant(float32(1e-12)))
	if err != nil {
		return nil, err
	}
	norm, err := G.Sqrt(ss)
	if err != nil {
		return nil, err
	}
	n := x.Shape()[0]
	norm, err = G.Reshape(norm, tensor.Shape{n, 1})
	if err != nil {
		return nil, err
	}
	xn, err := G.BroadcastHadamardDiv(x, norm, nil, []byte{1})
	if err != nil {
		return nil, err
	}
	xt, err := G.Transpose(xn)
	if err != nil {
		return nil, err
	}
	return G.Mul(xn, xt)
}

// weighted returns w*l, or nil when the term is switched off.
func weighted(l *G.Node, w float64) (*G.Node, error) {
	return G.Mul(l, G.NewConstant(float32(w)))
}

// sumTerms adds the non-nil terms.
func sumTerms(terms ...*G.Node) (*G.Node, error) {
	var total *G.Node
	for _, t := range terms {
		if t == nil {
			continue
		}
		if total == nil {
			total = t
			continue
		}
		var err error
		if total, err = G.Add(total, t); err != nil {
			return nil, err
		}
	}
	if total == nil {
		return nil, fmt.Errorf("no loss term is switched on")
	}
	return total, nil
}
