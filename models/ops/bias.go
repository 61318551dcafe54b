package ops

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// AddChannelBias adds b[c] to every element of channel c of x:
//
//	y[n,c,...] = x[n,c,...] + b[c]
//
// x is [N,C,H,W] or [N,C], b is [C]; y has the shape of x. It returns an error wrapping ErrShape if the shapes
// or dtypes do not fit.
func AddChannelBias(x, b *G.Node) (*G.Node, error) {
	xs, bs := x.Shape(), b.Shape()
	if (xs.Dims() != 4 && xs.Dims() != 2) || bs.Dims() != 1 || bs[0] != xs[1] || x.Dtype() != b.Dtype() {
		return nil, fmt.Errorf("add channel bias: input %q %v %v, bias %q %v %v: want [N,C,H,W] or [N,C] and [C] of one dtype: %w",
			x.Name(), xs, x.Dtype(), b.Name(), bs, b.Dtype(), ErrShape)
	}
	if err := checkFloat("add channel bias", x); err != nil {
		return nil, err
	}
	if xs.Dims() == 2 {
		b2, err := G.Reshape(b, tensor.Shape{1, xs[1]})
		if err != nil {
			return nil, err
		}
		return G.BroadcastAdd(x, b2, nil, []byte{0})
	}
	b4, err := G.Reshape(b, tensor.Shape{1, xs[1], 1, 1})
	if err != nil {
		return nil, err
	}
	return G.BroadcastAdd(x, b4, nil, []byte{0, 2, 3})
}
