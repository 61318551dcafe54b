package models

import (
	"strings"

	"github.com/bicyc/bicyc/arch"
)

// ConvLayer is the geometry of one convolution of a backbone run on images of a given size (see
// Backbone.ConvLayers): what a benchmark needs to count the work of a training step analytically.
type ConvLayer struct {
	Name                string // state name of the convolution: "conv1", "layer2.0.downsample.0", "reduce"
	In, Out             int    // channels
	Kernel, Stride, Pad int
	OutHeight, OutWidth int  // of the output feature map
	Frozen              bool // in a frozen stage (FreezeStages): no weight gradient
	NeedsInputGrad      bool // training back-propagates through it to an earlier trainable layer
}

// MACs returns the multiply-accumulates of the layer's forward pass on one image:
// Out · In · Kernel² · OutHeight · OutWidth (its weight gradient and its input gradient cost the same each).
func (l ConvLayer) MACs() int {
	return l.Out * l.In * l.Kernel * l.Kernel * l.OutHeight * l.OutWidth
}

// ConvLayers returns every convolution of the backbone, in forward order, for images of height x width, with
// its output size and whether a training step computes its weight gradient (not Frozen) and its input gradient
// (NeedsInputGrad: some trainable layer lies before it on the path from the image, so the gradient must flow
// through it). It mirrors Build: the convnet max-pools by 2 after its first two blocks, the ImageNet ResNet
// max-pools by 2 (3x3, pad 1) after its stem, and a BasicBlock's first conv and downsample both read the
// block's input.
func (b *Backbone) ConvLayers(height, width int) []ConvLayer {
	var layers []ConvLayer
	h, w := height, width
	trainableBefore := false // a trainable layer lies on the path before the current feature map
	var blockH, blockW int
	var blockTrainable bool
	for _, u := range b.units {
		ws := u.weight.Shape()
		l := ConvLayer{Name: u.conv, In: ws[1], Out: ws[0], Kernel: ws[2], Stride: u.stride, Pad: u.pad, Frozen: b.isFrozen(u)}
		inH, inW, inTrainable := h, w, trainableBefore
		if b.arch != arch.ConvNet && strings.HasPrefix(u.conv, "layer") {
			if strings.HasSuffix(u.conv, ".conv1") {
				blockH, blockW, blockTrainable = h, w, trainableBefore
			}
			if strings.HasSuffix(u.conv, ".conv1") || strings.HasSuffix(u.conv, ".downsample.0") {
				inH, inW, inTrainable = blockH, blockW, blockTrainable
			}
		}
		l.OutHeight = (inH+2*u.pad-l.Kernel)/u.stride + 1
		l.OutWidth = (inW+2*u.pad-l.Kernel)/u.stride + 1
		l.NeedsInputGrad = inTrainable
		layers = append(layers, l)
		if strings.HasSuffix(u.conv, ".downsample.0") {
			// The block's output is conv2's (already the current map) plus the shortcut.
			trainableBefore = trainableBefore || !l.Frozen || inTrainable
			continue
		}
		h, w = l.OutHeight, l.OutWidth
		trainableBefore = inTrainable || !l.Frozen
		switch {
		case b.arch == arch.ConvNet && (u.conv == "conv1" || u.conv == "conv2"):
			h, w = h/2, w/2
		case b.arch == arch.ResNet18ImageNet && u.conv == "conv1":
			h, w = (h+2-3)/2+1, (w+2-3)/2+1
		}
	}
	return layers
}
