package ops

import (
	G "gorgonia.org/gorgonia"
)

// ReLU returns max(x, 0) element-wise, for a tensor of any shape. Its gradient is 1 where x > 0 and 0
// elsewhere (PyTorch's convention at 0).
func ReLU(x *G.Node) (*G.Node, error) {
	if err := checkFloat("relu", x); err != nil {
		return nil, err
	}
	return G.Rectify(x)
}
