package ops

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Conv2d returns the 2-D cross-correlation of x with the filters w, without bias, as PyTorch's
// nn.Conv2d(bias=False) computes it:
//
//	y[n,o,i,j] = Σ_c Σ_kh Σ_kw w[o,c,kh,kw] · x[n,c,i·stride+kh-pad, j·stride+kw-pad]
//
// with zeros outside x. x is [N,C,H,W], w is [O,C,K,K] (square kernel), y is [N,O,H',W'] with
// H' = (H+2·pad-K)/stride+1 and the same for W'. It returns an error wrapping ErrShape if the shapes or dtypes
// do not fit or the output would be empty.
func Conv2d(x, w *G.Node, stride, pad int) (*G.Node, error) {
	if err := checkConvShapes(x, w, stride, pad); err != nil {
		return nil, err
	}
	k := w.Shape()[2]
	return G.Conv2d(x, w, tensor.Shape{k, k}, []int{pad, pad}, []int{stride, stride}, []int{1, 1})
}

func checkConvShapes(x, w *G.Node, stride, pad int) error {
	xs, ws := x.Shape(), w.Shape()
	switch {
	case xs.Dims() != 4:
		return fmt.Errorf("conv2d: input %q has shape %v, want [N,C,H,W]: %w", x.Name(), xs, ErrShape)
	case ws.Dims() != 4 || ws[2] != ws[3]:
		return fmt.Errorf("conv2d: filter %q has shape %v, want [O,C,K,K]: %w", w.Name(), ws, ErrShape)
	case ws[1] != xs[1]:
		return fmt.Errorf("conv2d: filter %q has %d input channels, input %q has %d: %w", w.Name(), ws[1], x.Name(), xs[1], ErrShape)
	case x.Dtype() != w.Dtype():
		return fmt.Errorf("conv2d: input %q is %v, filter %q is %v: %w", x.Name(), x.Dtype(), w.Name(), w.Dtype(), ErrShape)
	case stride < 1 || pad < 0:
		return fmt.Errorf("conv2d: stride %d, pad %d: want stride >= 1 and pad >= 0: %w", stride, pad, ErrShape)
	case xs[2]+2*pad < ws[2] || xs[3]+2*pad < ws[3]:
		return fmt.Errorf("conv2d: kernel %d does not fit input %q of shape %v with pad %d: %w", ws[2], x.Name(), xs, pad, ErrShape)
	}
	return checkFloat("conv2d", x)
}

// checkFloat reports an error unless n holds float32 or float64 values.
func checkFloat(op string, n *G.Node) error {
	if dt := n.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
		return fmt.Errorf("%s: %q is %v, want float32 or float64: %w", op, n.Name(), dt, ErrShape)
	}
	return nil
}
