package export

import (
	"fmt"
	"math"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/export/onnxgraph"
	"github.com/bicyc/bicyc/safetensors"
)

// bnEpsilon is the BatchNorm variance epsilon of package models (PyTorch's
// default, 1e-5).
const bnEpsilon = 1e-5

// BackboneShape fixes the geometry of an exported backbone: the image input
// is [N, InChannels, Height, Width] (NCHW, already normalised, N dynamic)
// and the output is [N, FeatureDim].
type BackboneShape struct {
	Arch          arch.Backbone
	InChannels    int
	Height, Width int
	FeatureDim    int
}

func (s BackboneShape) validate() error {
	minSide := 1
	switch s.Arch {
	case arch.ConvNet:
		minSide = 4 // two 2x2 max-pools must leave at least one pixel
	case arch.ResNet18:
	case arch.ResNet18ImageNet:
		minSide = 32 // the stem and the pool halve the image, then three strided stages
	default:
		return fmt.Errorf("%w: unknown backbone architecture %w", ErrState, s.Arch.Check())
	}
	if s.InChannels < 1 || s.FeatureDim < 1 || s.Height < minSide || s.Width < minSide {
		return fmt.Errorf("%w: %s backbone needs channels >= 1, feature dim >= 1 and image sides >= %d; got %d channels, %dx%d, dim %d",
			ErrState, s.Arch, minSide, s.InChannels, s.Height, s.Width, s.FeatureDim)
	}
	return nil
}

// Backbone returns backbone.onnx: input bundle.TensorImage [N,C,H,W] float32
// -> output bundle.TensorFeatures [N,S], in inference form. Every BatchNorm is folded
// into the convolution before it:
//
//	scale = gamma / sqrt(running_var + 1e-5)
//	W'[o] = W[o] * scale[o]
//	b'[o] = beta[o] - running_mean[o] * scale[o]
//
// state holds the module's tensors under the names of package models:
//
//	convnet:  conv{1,2,3}.weight ([32,C,3,3], [64,32,3,3], [128,64,3,3]),
//	          bn{1,2,3}.{weight,bias,running_mean,running_var},
//	          reduce.weight [S,128,1,1], reduce.bias [S]
//	resnet18: conv1.weight [64,C,3,3], bn1.*, layer{1..4}.{0,1}.{conv1,bn1,conv2,bn2}.*,
//	          layer{2,3,4}.0.downsample.0.weight [out,in,1,1], layer{2,3,4}.0.downsample.1.*,
//	          reduce.weight [S,512,1,1], reduce.bias [S]
//	resnet18-imagenet: the same with conv1.weight [64,C,7,7] (stride 2, pad 3)
//	          followed by a 3x3 stride-2 MaxPool with pads 1
//
// A ResNet's stage widths are conv1.weight's first dimension w, then w, 2w,
// 4w, 8w (64 for the standard network).
//
// Other tensors (task heads, num_batches_tracked) are ignored. A missing,
// misshapen or non-finite tensor is an error wrapping ErrState.
func Backbone(shape BackboneShape, state []safetensors.Tensor) ([]byte, error) {
	g := onnxgraph.New("bicyc_backbone")
	image := g.Input(bundle.TensorImage, onnxgraph.Float, onnxgraph.BatchDim, shape.InChannels, shape.Height, shape.Width)
	features, err := addBackbone(g, image, shape, state)
	if err != nil {
		return nil, err
	}
	g.Output(features, onnxgraph.Float, onnxgraph.BatchDim, shape.FeatureDim)
	return onnxgraph.Marshal(g.Model(fmt.Sprintf("bicyc %s backbone: image [N,%d,%d,%d] -> features [N,%d]",
		shape.Arch, shape.InChannels, shape.Height, shape.Width, shape.FeatureDim)))
}

// addBackbone appends the backbone to g and returns the name of its
// [N,S] output value, bundle.TensorFeatures.
func addBackbone(g *onnxgraph.Graph, image string, shape BackboneShape, tensors []safetensors.Tensor) (string, error) {
	if err := shape.validate(); err != nil {
		return "", err
	}
	s, err := newStateDict("backbone", tensors)
	if err != nil {
		return "", err
	}
	b := backboneBuilder{g: g, state: s}
	var x string
	var channels int // of the last stage, the input of the reduction
	switch shape.Arch {
	case arch.ConvNet:
		x, err = b.convNet(image, shape.InChannels)
		channels = 128
	case arch.ResNet18, arch.ResNet18ImageNet:
		x, channels, err = b.resNet18(image, shape)
	}
	if err != nil {
		return "", err
	}
	x, err = b.reduce(x, channels, shape.FeatureDim)
	if err != nil {
		return "", err
	}
	pooled := g.Op("GlobalAveragePool", "pooled", []string{x})
	flat := g.Ints("features_shape", []int{2}, -1, int64(shape.FeatureDim))
	return g.Op("Reshape", bundle.TensorFeatures, []string{pooled, flat}), nil
}

type backboneBuilder struct {
	g     *onnxgraph.Graph
	state stateDict
}

// convNet is the small default backbone for 28x28 inputs (docs/method.md,
// "Networks"): three conv-BN-ReLU blocks, max-pooling after the first two.
func (b backboneBuilder) convNet(x string, in int) (string, error) {
	widths := []int{32, 64, 128}
	for i, out := range widths {
		n := i + 1
		y, err := b.convBN(x, fmt.Sprintf("conv%d", n), fmt.Sprintf("bn%d", n), out, in, 3, 1, 1)
		if err != nil {
			return "", err
		}
		x = b.g.Op("Relu", fmt.Sprintf("relu%d", n), []string{y})
		if n < len(widths) {
			x = b.g.Op("MaxPool", fmt.Sprintf("pool%d", n), []string{x},
				onnxgraph.AttrInts("kernel_shape", 2, 2), onnxgraph.AttrInts("strides", 2, 2))
		}
		in = out
	}
	return x, nil
}

// resNet18 is the CIFAR ResNet-18 (3x3 stride-1 stem, no max-pool) or the
// ImageNet one (7x7 stride-2 stem, 3x3 stride-2 max-pool), then four stages
// of two BasicBlocks of w, 2w, 4w, 8w channels. It returns the last stage's
// output and its channels, 8w.
func (b backboneBuilder) resNet18(x string, shape BackboneShape) (string, int, error) {
	stem, err := b.state.shape("conv1.weight")
	if err != nil {
		return "", 0, err
	}
	if len(stem) != 4 || stem[0] < 1 {
		return "", 0, fmt.Errorf("%w: backbone tensor \"conv1.weight\" has shape %v, want [width,C,k,k]", ErrState, stem)
	}
	width, k, stride, pad := stem[0], 3, 1, 1
	if shape.Arch == arch.ResNet18ImageNet {
		k, stride, pad = 7, 2, 3
	}
	y, err := b.convBN(x, "conv1", "bn1", width, shape.InChannels, k, stride, pad)
	if err != nil {
		return "", 0, err
	}
	x = b.g.Op("Relu", "relu", []string{y})
	if shape.Arch == arch.ResNet18ImageNet {
		x = b.g.Op("MaxPool", "maxpool", []string{x}, onnxgraph.AttrInts("kernel_shape", 3, 3),
			onnxgraph.AttrInts("strides", 2, 2), onnxgraph.AttrInts("pads", 1, 1, 1, 1))
	}
	in := width
	for stage := range 4 {
		out := width << stage
		for block := range 2 {
			stride := 1
			if stage > 0 && block == 0 {
				stride = 2
			}
			x, err = b.basicBlock(x, fmt.Sprintf("layer%d.%d.", stage+1, block), in, out, stride)
			if err != nil {
				return "", 0, err
			}
			in = out
		}
	}
	return x, in, nil
}

// basicBlock is relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), where
// the shortcut is a strided 1x1 conv + BN when the shape changes.
func (b backboneBuilder) basicBlock(x, prefix string, in, out, stride int) (string, error) {
	y, err := b.convBN(x, prefix+"conv1", prefix+"bn1", out, in, 3, stride, 1)
	if err != nil {
		return "", err
	}
	y = b.g.Op("Relu", prefix+"relu1", []string{y})
	y, err = b.convBN(y, prefix+"conv2", prefix+"bn2", out, out, 3, 1, 1)
	if err != nil {
		return "", err
	}
	shortcut := x
	if stride != 1 || in != out {
		shortcut, err = b.convBN(x, prefix+"downsample.0", prefix+"downsample.1", out, in, 1, stride, 0)
		if err != nil {
			return "", err
		}
	}
	sum := b.g.Op("Add", prefix+"add", []string{y, shortcut})
	return b.g.Op("Relu", prefix+"relu2", []string{sum}), nil
}

// convBN emits one Conv whose weight and bias are conv's weight with BN bn
// folded in (formula on Backbone); its output value is named conv.
func (b backboneBuilder) convBN(x, conv, bn string, out, in, k, stride, pad int) (string, error) {
	w, err := b.state.get(conv+".weight", out, in, k, k)
	if err != nil {
		return "", err
	}
	var bnParams [4][]float32
	for i, p := range []string{"weight", "bias", "running_mean", "running_var"} {
		if bnParams[i], err = b.state.get(bn+"."+p, out); err != nil {
			return "", err
		}
	}
	gamma, beta, mean, variance := bnParams[0], bnParams[1], bnParams[2], bnParams[3]
	folded := make([]float32, len(w))
	bias := make([]float32, out)
	per := in * k * k
	for o := range out {
		v := float64(variance[o]) + bnEpsilon
		if v <= 0 {
			return "", fmt.Errorf("%w: backbone tensor %q has negative variance %v at channel %d",
				ErrState, bn+".running_var", variance[o], o)
		}
		scale := float64(gamma[o]) / math.Sqrt(v)
		for i := o * per; i < (o+1)*per; i++ {
			folded[i] = float32(float64(w[i]) * scale)
		}
		bias[o] = float32(float64(beta[o]) - float64(mean[o])*scale)
	}
	wName := b.g.Floats(conv+".weight", []int{out, in, k, k}, folded)
	bName := b.g.Floats(conv+".bias", []int{out}, bias)
	return b.g.Op("Conv", conv, []string{x, wName, bName},
		onnxgraph.AttrInts("kernel_shape", int64(k), int64(k)),
		onnxgraph.AttrInts("strides", int64(stride), int64(stride)),
		onnxgraph.AttrInts("pads", int64(pad), int64(pad), int64(pad), int64(pad))), nil
}

// reduce is the linear 1x1 conv (with bias, no BN, no ReLU) from the last
// stage's channels to the feature dimension S (docs/method.md, "Networks").
func (b backboneBuilder) reduce(x string, in, s int) (string, error) {
	w, err := b.state.get("reduce.weight", s, in, 1, 1)
	if err != nil {
		return "", err
	}
	bias, err := b.state.get("reduce.bias", s)
	if err != nil {
		return "", err
	}
	wName := b.g.Floats("reduce.weight", []int{s, in, 1, 1}, w)
	bName := b.g.Floats("reduce.bias", []int{s}, bias)
	return b.g.Op("Conv", "reduce", []string{x, wName, bName}, onnxgraph.AttrInts("kernel_shape", 1, 1)), nil
}
