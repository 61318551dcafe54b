package ops

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// AddChannelBias adds b[c] to every element of channel c of x:
//
//	y[n,c,...] = x[n,c,...] + b[c]
//
// x is [N,C,H,W] or [N,C], b is [C]; y has the shape of x. The gradient with respect to x is the output
// gradient itself, and with respect to b its sum over everything but the channel axis. It returns an error
// wrapping ErrShape if the shapes or dtypes do not fit.
func AddChannelBias(x, b *G.Node) (*G.Node, error) {
	xs, bs := x.Shape(), b.Shape()
	if (xs.Dims() != 4 && xs.Dims() != 2) || bs.Dims() != 1 || bs[0] != xs[1] || x.Dtype() != b.Dtype() {
		return nil, fmt.Errorf("add channel bias: input %q %v %v, bias %q %v %v: want [N,C,H,W] or [N,C] and [C] of one dtype: %w",
			x.Name(), xs, x.Dtype(), b.Name(), bs, b.Dtype(), ErrShape)
	}
	if err := checkFloat("add channel bias", x); err != nil {
		return nil, err
	}
	return G.ApplyOp(&channelBiasOp{shape: xs.Clone()}, x, b)
}

// channelBiasOp adds a per-channel bias; shape is that of x, [N,C,H,W] or [N,C].
type channelBiasOp struct {
	plainOp
	shape tensor.Shape
	out   buffer
}

// planes returns the batch size, the channels and the number of values per channel and image.
func (op *channelBiasOp) planes() (n, c, s int) {
	n, c, s = op.shape[0], op.shape[1], 1
	if op.shape.Dims() == 4 {
		s = op.shape[2] * op.shape[3]
	}
	return n, c, s
}

func (op *channelBiasOp) Arity() int { return 2 }
func (op *channelBiasOp) Type() hm.Type {
	t := tensorType(op.shape.Dims())
	return hm.NewFnType(t, tensorType(1), t)
}
func (op *channelBiasOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.shape.Clone(), nil
}
func (op *channelBiasOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *channelBiasOp) Hashcode() uint32      { return hashOf(op) }
func (op *channelBiasOp) String() string        { return fmt.Sprintf("AddChannelBias%v", op.shape) }

func (op *channelBiasOp) DiffWRT(int) []bool { return []bool{true, true} }
func (op *channelBiasOp) SymDiff(_ G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	db, err := G.ApplyOp(&channelSumOp{bias: op}, grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{grad, db}, nil
}

func (op *channelBiasOp) Do(vals ...G.Value) (G.Value, error) {
	x, err := denseOf("add channel bias", 0, vals[0], vals[0].Dtype(), op.shape)
	if err != nil {
		return nil, err
	}
	b, err := denseOf("add channel bias", 1, vals[1], x.Dtype(), op.shape[1:2])
	if err != nil {
		return nil, err
	}
	y := op.out.get(x.Dtype(), op.shape...)
	n, c, s := op.planes()
	switch x.Dtype() {
	case tensor.Float32:
		addChannelBias(x.Float32s(), b.Float32s(), y.Float32s(), n, c, s)
	case tensor.Float64:
		addChannelBias(x.Float64s(), b.Float64s(), y.Float64s(), n, c, s)
	default:
		return nil, fmt.Errorf("add channel bias: dtype %v: %w", x.Dtype(), ErrShape)
	}
	return y, nil
}

func addChannelBias[T float](x, b, y []T, n, c, s int) {
	parallelFor(n, 1+16384/(c*s), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if s == 1 { // a row of a [N,C] matrix
				copy(y[i*c:(i+1)*c], x[i*c:(i+1)*c])
				addTo(y[i*c:(i+1)*c], b)
				continue
			}
			for ch, v := range b {
				off := (i*c + ch) * s
				affine(y[off:off+s], x[off:off+s], 1, v, false)
			}
		}
	})
}

// channelSumOp sums the output gradient of a channelBiasOp per channel: db[c] = Σ_n Σ_spatial dy[n,c,...].
type channelSumOp struct {
	plainOp
	bias *channelBiasOp
	out  buffer
}

func (op *channelSumOp) Arity() int { return 1 }
func (op *channelSumOp) Type() hm.Type {
	return hm.NewFnType(tensorType(op.bias.shape.Dims()), tensorType(1))
}
func (op *channelSumOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return op.bias.shape[1:2].Clone(), nil
}
func (op *channelSumOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op *channelSumOp) Hashcode() uint32      { return hashOf(op) }
func (op *channelSumOp) String() string        { return fmt.Sprintf("ChannelSum%v", op.bias.shape) }

func (op *channelSumOp) Do(vals ...G.Value) (G.Value, error) {
	dy, err := denseOf("add channel bias gradient", 0, vals[0], vals[0].Dtype(), op.bias.shape)
	if err != nil {
		return nil, err
	}
	n, c, s := op.bias.planes()
	db := op.out.get(dy.Dtype(), c)
	switch dy.Dtype() {
	case tensor.Float32:
		channelSum(dy.Float32s(), db.Float32s(), n, c, s)
	case tensor.Float64:
		channelSum(dy.Float64s(), db.Float64s(), n, c, s)
	default:
		return nil, fmt.Errorf("add channel bias gradient: dtype %v: %w", dy.Dtype(), ErrShape)
	}
	return db, nil
}

// channelSum sums dy [N,C,S] over N and S into db [C], accumulating in float64; channels are split across
// goroutines. For S = 1 (a [N,C] matrix) each goroutine adds whole rows of its channels, in order, instead of
// reading a column with a stride of C.
func channelSum[T float](dy, db []T, n, c, s int) {
	if s == 1 {
		parallelFor(c, 1+16384/n, func(lo, hi int) {
			acc := make([]float64, hi-lo)
			for i := 0; i < n; i++ {
				for j, v := range dy[i*c+lo : i*c+hi] {
					acc[j] += float64(v)
				}
			}
			for j, v := range acc {
				db[lo+j] = T(v)
			}
		})
		return
	}
	parallelFor(c, 1+16384/(n*s), func(lo, hi int) {
		for ch := lo; ch < hi; ch++ {
			var sum float64
			for i := 0; i < n; i++ {
				for _, v := range dy[(i*c+ch)*s : (i*c+ch+1)*s] {
					sum += float64(v)
				}
			}
			db[ch] = T(sum)
		}
	})
}
