package arch

import (
	"fmt"
	"slices"
	"strings"
)

// Backbone is the architecture of the feature extractor f (model.backbone;
// docs/method.md, "Networks").
type Backbone string

// The backbones.
const (
	// ConvNet is the small default backbone for 28x28 grayscale inputs (docs/method.md, "Networks": conv blocks,
	// then the linear S-dim reduction, then global average pooling):
	//
	//	conv3x3 C->32 pad 1, BN, ReLU, maxpool 2
	//	conv3x3 32->64 pad 1, BN, ReLU, maxpool 2
	//	conv3x3 64->128 pad 1, BN, ReLU
	//	conv1x1 128->S with bias (no BN, no ReLU), global average pool -> [N,S]
	ConvNet Backbone = "convnet"
	// ResNet18 is the CIFAR ResNet-18 of docs/method.md ("Networks"): a 3x3 stride-1 stem conv 64 + BN + ReLU without max-pool,
	// BasicBlocks [2,2,2,2] at 64, 128, 256, 512 channels with strides 1, 2, 2, 2 (1x1 conv + BN downsample where
	// the shape changes), then a 1x1 conv 512->S with bias (no BN, no ReLU) and global average pooling.
	ResNet18 Backbone = "resnet18"
	// ResNet18ImageNet is torchvision's ImageNet ResNet-18 with the same reduction and pooling: a 7x7
	// stride-2 stem conv 64 (pad 3) + BN + ReLU, a 3x3 stride-2 max-pool (pad 1), then ResNet18's stages,
	// 1x1 conv 512->S with bias and global average pooling. Its tensor names are torchvision's, so a
	// torchvision state dict (without fc) loads into it. It takes any square or rectangular input of at least
	// 32x32 pixels: 224x224 for ImageNet and CUB-200 (the features are 7x7 before pooling), 64x64 for small photos.
	ResNet18ImageNet Backbone = "resnet18-imagenet"
)

// Backbones lists every backbone.
func Backbones() []Backbone { return []Backbone{ConvNet, ResNet18, ResNet18ImageNet} }

// Check returns an error unless b is one of Backbones.
func (b Backbone) Check() error { return check(b, Backbones()) }

// Mapper is the architecture of the distiller D and the adapter A
// (model.mapper; docs/method.md, "Networks").
type Mapper string

// The mappers.
const (
	// MLP is Linear(S -> h*S) -> exact GELU -> Linear(h*S -> S), both with bias and no normalisation
	// (docs/method.md, "Networks": the paper's D and A).
	MLP Mapper = "mlp"
	// Linear is a single S x S matrix without bias, y = x W^T (docs/method.md, "Networks": the ablation variant).
	Linear Mapper = "linear"
	// LinearBias is an S x S matrix with a bias, y = x W^T + b, as the authors' code's nn.Linear: what
	// model.mapper linear with model.linear_bias trains (docs/method.md, "Fidelity switches"). A
	// configuration names it as Linear.
	LinearBias Mapper = "linear-bias"
	// ResidualMLP is x + MLP(x), MLP as in MLP, with fc2 starting at zero: an untrained map is the
	// identity, so Stage II starts from the old prototypes instead of scrambling them. Not in the paper;
	// the tensors are MLP's.
	ResidualMLP Mapper = "residual-mlp"
)

// Mappers lists the mappers a configuration names (model.mapper).
func Mappers() []Mapper { return []Mapper{MLP, Linear, ResidualMLP} }

// Check returns an error unless m is one of Mappers.
func (m Mapper) Check() error { return check(m, Mappers()) }

// CheckTrained returns an error unless m is a mapper a trained network
// holds: one of Mappers, or LinearBias.
func (m Mapper) CheckTrained() error { return check(m, append(Mappers(), LinearBias)) }

// Hidden reports whether m has a hidden layer (MLP and ResidualMLP), whose
// width model.hidden_mult sets.
func (m Mapper) Hidden() bool { return m == MLP || m == ResidualMLP }

// ResizeMode says how an image of another size becomes the network's
// height x width (data.resize_mode), at test time, in the exported model
// and for image folders.
type ResizeMode string

// The resize modes.
const (
	// Squash resizes the whole image to Height x Width, whatever its
	// aspect ratio: the behaviour of every model directory written before
	// the mode was recorded (an empty mode means squash), and the right one
	// for datasets whose images all have the model's size (Fashion-MNIST,
	// CIFAR), which it leaves untouched.
	Squash ResizeMode = "squash"
	// CenterCrop keeps the aspect ratio: it resizes the shorter side and
	// crops the centre Height x Width, as torchvision's Resize followed by
	// CenterCrop, the standard ImageNet evaluation transform. A 640x480
	// photo is cropped, never squashed.
	CenterCrop ResizeMode = "center-crop"
)

// ResizeModes lists every resize mode.
func ResizeModes() []ResizeMode { return []ResizeMode{Squash, CenterCrop} }

// Check returns an error unless r is one of ResizeModes.
func (r ResizeMode) Check() error { return check(r, ResizeModes()) }

// check returns an error unless v is one of valid, naming them.
func check[T ~string](v T, valid []T) error {
	if slices.Contains(valid, v) {
		return nil
	}
	names := make([]string, len(valid))
	for i, n := range valid {
		names[i] = string(n)
	}
	return fmt.Errorf("%q is not one of %s", v, strings.Join(names, ", "))
}
