package export

import (
	"fmt"
	"math"

	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/safetensors"
)

// The reference forward passes below are the textbook definitions in
// float64, with BatchNorm applied separately (not folded), so they check
// the exporter's folding and wiring independently.

// act is a float64 activation [C,H,W] of one image.
type act struct {
	c, h, w int
	v       []float64
}

func (a act) at(c, y, x int) float64 { return a.v[(c*a.h+y)*a.w+x] }

func refTensor(state []safetensors.Tensor, name string) []float64 {
	t, ok := safetensors.Find(state, name)
	if !ok {
		panic("reference: missing " + name)
	}
	out := make([]float64, len(t.Data))
	for i, v := range t.Data {
		out[i] = float64(v)
	}
	return out
}

func refConv(a act, w, bias []float64, out, k, stride, pad int) act {
	oh := (a.h+2*pad-k)/stride + 1
	ow := (a.w+2*pad-k)/stride + 1
	r := act{c: out, h: oh, w: ow, v: make([]float64, out*oh*ow)}
	for o := range out {
		for y := range oh {
			for x := range ow {
				var sum float64
				if bias != nil {
					sum = bias[o]
				}
				for c := range a.c {
					for ky := range k {
						iy := y*stride - pad + ky
						if iy < 0 || iy >= a.h {
							continue
						}
						for kx := range k {
							ix := x*stride - pad + kx
							if ix < 0 || ix >= a.w {
								continue
							}
							sum += w[((o*a.c+c)*k+ky)*k+kx] * a.at(c, iy, ix)
						}
					}
				}
				r.v[(o*oh+y)*ow+x] = sum
			}
		}
	}
	return r
}

func refBN(a act, state []safetensors.Tensor, bn string) act {
	g, b := refTensor(state, bn+".weight"), refTensor(state, bn+".bias")
	m, v := refTensor(state, bn+".running_mean"), refTensor(state, bn+".running_var")
	r := act{c: a.c, h: a.h, w: a.w, v: make([]float64, len(a.v))}
	n := a.h * a.w
	for i, x := range a.v {
		c := i / n
		r.v[i] = (x-m[c])/math.Sqrt(v[c]+1e-5)*g[c] + b[c]
	}
	return r
}

func refReLU(a act) act {
	r := act{c: a.c, h: a.h, w: a.w, v: make([]float64, len(a.v))}
	for i, x := range a.v {
		r.v[i] = math.Max(x, 0)
	}
	return r
}

func refMaxPool2(a act) act {
	oh, ow := a.h/2, a.w/2
	r := act{c: a.c, h: oh, w: ow, v: make([]float64, a.c*oh*ow)}
	for c := range a.c {
		for y := range oh {
			for x := range ow {
				m := math.Inf(-1)
				for dy := range 2 {
					for dx := range 2 {
						m = math.Max(m, a.at(c, 2*y+dy, 2*x+dx))
					}
				}
				r.v[(c*oh+y)*ow+x] = m
			}
		}
	}
	return r
}

func refConvBN(a act, state []safetensors.Tensor, conv, bn string, out, k, stride, pad int) act {
	return refBN(refConv(a, refTensor(state, conv+".weight"), nil, out, k, stride, pad), state, bn)
}

// refReduceGAP applies the 1x1 reduction with bias and global average pooling.
func refReduceGAP(a act, state []safetensors.Tensor, s int) []float64 {
	r := refConv(a, refTensor(state, "reduce.weight"), refTensor(state, "reduce.bias"), s, 1, 1, 0)
	out := make([]float64, s)
	n := r.h * r.w
	for i, x := range r.v {
		out[i/n] += x / float64(n)
	}
	return out
}

func refConvNet(img act, state []safetensors.Tensor, s int) []float64 {
	a := img
	for i, out := range []int{32, 64, 128} {
		a = refReLU(refConvBN(a, state, fmt.Sprintf("conv%d", i+1), fmt.Sprintf("bn%d", i+1), out, 3, 1, 1))
		if i < 2 {
			a = refMaxPool2(a)
		}
	}
	return refReduceGAP(a, state, s)
}

func refResNet18(img act, state []safetensors.Tensor, s int) []float64 {
	a := refReLU(refConvBN(img, state, "conv1", "bn1", 64, 3, 1, 1))
	for stage, out := range []int{64, 128, 256, 512} {
		for block := range 2 {
			p := fmt.Sprintf("layer%d.%d.", stage+1, block)
			stride := 1
			if stage > 0 && block == 0 {
				stride = 2
			}
			y := refReLU(refConvBN(a, state, p+"conv1", p+"bn1", out, 3, stride, 1))
			y = refConvBN(y, state, p+"conv2", p+"bn2", out, 3, 1, 1)
			short := a
			if stride != 1 {
				short = refConvBN(a, state, p+"downsample.0", p+"downsample.1", out, 1, stride, 0)
			}
			for i := range y.v {
				y.v[i] += short.v[i]
			}
			a = refReLU(y)
		}
	}
	return refReduceGAP(a, state, s)
}

// refMLP is Linear -> exact GELU -> Linear for one feature row.
func refMLP(x []float64, state []safetensors.Tensor) []float64 {
	w1, b1 := refTensor(state, "fc1.weight"), refTensor(state, "fc1.bias")
	w2, b2 := refTensor(state, "fc2.weight"), refTensor(state, "fc2.bias")
	s, h := len(x), len(b1)
	hid := make([]float64, h)
	for i := range h {
		v := b1[i]
		for j := range s {
			v += w1[i*s+j] * x[j]
		}
		hid[i] = 0.5 * v * (1 + math.Erf(v/math.Sqrt2))
	}
	out := make([]float64, s)
	for i := range s {
		v := b2[i]
		for j := range h {
			v += w2[i*h+j] * hid[j]
		}
		out[i] = v
	}
	return out
}

// refScores is score_c = ||W_c (zh - m_c)||^2 + b_c for one feature row,
// computed per class without the offset trick the graph uses.
func refScores(z []float64, t gauss.ClassifierTables) []float64 {
	zh := append([]float64(nil), z...)
	if t.Normalize {
		var n float64
		for _, v := range zh {
			n += v * v
		}
		n = math.Max(math.Sqrt(n), 1e-12)
		for i := range zh {
			zh[i] /= n
		}
	}
	out := make([]float64, t.K)
	for c := range t.K {
		var sum float64
		for i := range t.S {
			var y float64
			for j := range t.S {
				y += float64(t.Whiten[(c*t.S+i)*t.S+j]) * (zh[j] - float64(t.Means[c*t.S+j]))
			}
			sum += y * y
		}
		out[c] = sum + float64(t.Bias[c])
	}
	return out
}
