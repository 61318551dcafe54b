package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/models/ops"
	"github.com/bicyc/bicyc/safetensors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ResNetWidth is the channel count of the first stage of a standard ResNet-18; its stages have 1, 2, 4 and 8
// times as many.
const ResNetWidth = 64

// bnEps is the batch-normalisation epsilon of every backbone BN layer (PyTorch's default, the ONNX exporter's
// contract).
const bnEps = 1e-5

// Backbone is the feature extractor f: image [N,C,H,W] -> feature [N,S] (docs/method.md, "Networks").
//
// Its weights are float32 tensors owned by the Backbone, and its batch-normalisation running statistics are
// ops.BatchNorm values owned by it too. Every graph built from a Backbone binds the same tensors and statistics:
// a training graph at one batch size and an evaluation graph at another see the same, current values, and a
// solver step through one graph is seen by all (see Build). A Backbone is not safe for concurrent use: do not run
// two of its graphs, or a graph and SetState, at the same time.
type Backbone struct {
	arch       arch.Backbone
	inChannels int
	featureDim int
	width      int         // first-stage channels of the ResNets; 0 for the convnet
	stages     int         // units with stage < stages can be frozen: every one but the reduction
	frozen     int         // units with stage < frozen are frozen (see FreezeStages)
	units      []*convUnit // in forward and state order
	byName     map[string]*convUnit
	nodePrefix string
}

// convUnit is a convolution, optionally with bias, optionally followed by batch normalisation.
type convUnit struct {
	conv, bn    string        // state names: "layer2.0.conv1", "layer2.0.bn1"; bn is "" without BN
	stage       int           // 0 for the stem, 1..4 for layer1..layer4 of a ResNet, the layer for the convnet
	stride, pad int           // of the convolution
	weight      *tensor.Dense // [out,in,k,k]
	bias        *tensor.Dense // [out], nil without bias
	gamma, beta *tensor.Dense // [out], nil without BN
	stats       *ops.BatchNorm
}

// params returns the unit's trainable tensors with their state names.
func (u *convUnit) params() []namedParam {
	ps := []namedParam{{u.conv + ".weight", u.weight}}
	if u.bias != nil {
		ps = append(ps, namedParam{u.conv + ".bias", u.bias})
	}
	if u.stats != nil {
		ps = append(ps, namedParam{u.bn + ".weight", u.gamma}, namedParam{u.bn + ".bias", u.beta})
	}
	return ps
}

// NewBackbone returns a backbone of the given architecture (arch.ConvNet, arch.ResNet18 or arch.ResNet18ImageNet)
// for images with inChannels channels, producing featureDim (S) features, initialised as docs/method.md
// ("Networks") states:
//
//	conv weights ~ N(0, 2/(k*k*out))   (standard deviation sqrt(2/(k*k*out)))
//	BN gamma = 1, beta = 0, running mean 0, running variance 1;  reduce-conv bias = 0
//
// The ResNets have the standard width, ResNetWidth. It returns an error for an unknown architecture or
// non-positive sizes, and panics if rng is nil.
func NewBackbone(a arch.Backbone, inChannels, featureDim int, rng *rand.Rand) (*Backbone, error) {
	return NewBackboneWidth(a, 0, inChannels, featureDim, rng)
}

// NewBackboneWidth is NewBackbone with the channels of a ResNet's first stage: its stages have width, 2*width,
// 4*width and 8*width channels, and 0 means ResNetWidth. Narrower ResNets train faster and make small test
// fixtures; a pretrained file must have the same width. The convnet has no width option: width must be 0.
func NewBackboneWidth(a arch.Backbone, width, inChannels, featureDim int, rng *rand.Rand) (*Backbone, error) {
	if rng == nil {
		panic("models: NewBackbone with a nil rng")
	}
	b, err := newBackbone(a, width, inChannels, featureDim)
	if err != nil {
		return nil, err
	}
	for _, u := range b.units {
		s := u.weight.Shape()
		fill := normalFill(rng, math.Sqrt(2/float64(s[2]*s[3]*s[0])))
		data := u.weight.Data().([]float32)
		for i := range data {
			data[i] = fill()
		}
	}
	return b, nil
}

// newBackbone returns a backbone with zero conv weights and biases, BN gamma 1 and beta 0.
func newBackbone(a arch.Backbone, width, inChannels, featureDim int) (*Backbone, error) {
	if inChannels <= 0 || featureDim <= 0 || width < 0 {
		return nil, fmt.Errorf("backbone: %d input channels, feature dimension %d and width %d: want positive sizes", inChannels, featureDim, width)
	}
	b := &Backbone{arch: a, inChannels: inChannels, featureDim: featureDim,
		byName: make(map[string]*convUnit), nodePrefix: newNodePrefix("backbone")}
	switch a {
	case arch.ConvNet:
		if width != 0 {
			return nil, fmt.Errorf("backbone: %s has a fixed width, got width %d", a, width)
		}
		for i, out := range []int{32, 64, 128} {
			n := strconv.Itoa(i + 1)
			b.addConv("conv"+n, "bn"+n, i, inChannels, out, 3, 1, 1)
			inChannels = out
		}
		b.addReduce(3, 128)
	case arch.ResNet18:
		b.addResNet18(width, 3, 1, 1)
	case arch.ResNet18ImageNet:
		b.addResNet18(width, 7, 2, 3)
	default:
		return nil, fmt.Errorf("backbone: unknown architecture: %w", a.Check())
	}
	return b, nil
}

// addResNet18 appends a ResNet-18 of the given width (0: ResNetWidth) with a stem conv of size k, stride and
// pad, its four stages and the reduction.
func (b *Backbone) addResNet18(width, k, stride, pad int) {
	if width == 0 {
		width = ResNetWidth
	}
	b.width = width
	b.addConv("conv1", "bn1", 0, b.inChannels, width, k, stride, pad)
	in := width
	for layer := range 4 {
		out := width << layer
		for block := range 2 {
			p := resnetBlockName(layer, block)
			stride := 1
			if block == 0 && layer > 0 {
				stride = 2
			}
			b.addConv(p+".conv1", p+".bn1", layer+1, in, out, 3, stride, 1)
			b.addConv(p+".conv2", p+".bn2", layer+1, out, out, 3, 1, 1)
			if stride != 1 || in != out {
				b.addConv(p+".downsample.0", p+".downsample.1", layer+1, in, out, 1, stride, 0)
			}
			in = out
		}
	}
	b.addReduce(5, in)
}

// resnetBlockName returns the torchvision-style prefix of a BasicBlock: "layer1.0" ... "layer4.1".
func resnetBlockName(layer, block int) string {
	return "layer" + strconv.Itoa(layer+1) + "." + strconv.Itoa(block)
}

// addConv appends a k x k convolution in->out without bias, followed by batch normalisation bn, in stage.
func (b *Backbone) addConv(conv, bn string, stage, in, out, k, stride, pad int) {
	stats := ops.NewBatchNorm(out)
	stats.Eps = bnEps
	b.addUnit(&convUnit{conv: conv, bn: bn, stage: stage, stride: stride, pad: pad, weight: newTensor(nil, out, in, k, k),
		gamma: newTensor(constFill(1), out), beta: newTensor(nil, out), stats: stats})
}

// addReduce appends the 1x1 reduction conv in->S with bias and without BN, as the stage after the others.
func (b *Backbone) addReduce(stage, in int) {
	b.stages = stage
	b.addUnit(&convUnit{conv: "reduce", stage: stage, stride: 1, weight: newTensor(nil, b.featureDim, in, 1, 1),
		bias: newTensor(nil, b.featureDim)})
}

func (b *Backbone) addUnit(u *convUnit) {
	b.units = append(b.units, u)
	b.byName[u.conv] = u
}

// Arch returns the architecture name, arch.ConvNet or arch.ResNet18.
func (b *Backbone) Arch() arch.Backbone { return b.arch }

// InChannels returns the number of image channels C the backbone expects.
func (b *Backbone) InChannels() int { return b.inChannels }

// FeatureDim returns S, the number of output features.
func (b *Backbone) FeatureDim() int { return b.featureDim }

// Width returns the channels of a ResNet's first stage (ResNetWidth unless built narrower), 0 for the convnet.
func (b *Backbone) Width() int { return b.width }

// Stages returns the number of stages FreezeStages counts: the stem and the four residual stages of a ResNet
// (5), the three conv blocks of the convnet (3).
func (b *Backbone) Stages() int { return b.stages }

// FrozenStages returns the number of leading stages frozen by FreezeStages.
func (b *Backbone) FrozenStages() int { return b.frozen }

// FreezeStages freezes the first n stages, counted from the input: for a ResNet 1 is the stem (conv1, bn1),
// 2 adds layer1, ... 5 is everything but the 1x1 reduction; 0 trains everything. A frozen stage's weights are
// not among Params (no gradient, no update), and its batch normalisation uses the running statistics, never
// updating them, even in a training graph (PyTorch's module.eval() with requires_grad off), so fine-tuning a
// pretrained backbone keeps its early features exactly. Frozen weights are still in State, saved and loaded
// like the others, and Clone keeps the setting. Graphs built earlier keep the setting they were built with.
// It returns an error unless 0 <= n <= Stages().
func (b *Backbone) FreezeStages(n int) error {
	if n < 0 || n > b.stages {
		return fmt.Errorf("backbone %s: cannot freeze %d stages, it has %d before the reduction", b.arch, n, b.stages)
	}
	b.frozen = n
	return nil
}

// isFrozen reports whether u belongs to a frozen stage.
func (b *Backbone) isFrozen(u *convUnit) bool { return u.stage < b.frozen }

// allParams returns every weight tensor, frozen or not, with its state name, in state order.
func (b *Backbone) allParams() []namedParam {
	var ps []namedParam
	for _, u := range b.units {
		ps = append(ps, u.params()...)
	}
	return ps
}

// params returns the tensors of the stages that are not frozen, with their state names, in state order.
func (b *Backbone) params() []namedParam {
	var ps []namedParam
	for _, u := range b.units {
		if !b.isFrozen(u) {
			ps = append(ps, u.params()...)
		}
	}
	return ps
}

// Params returns the backbone's own trainable tensors (not copies: writing them changes the backbone), in the
// order of Built.Params: for each layer in forward order, conv weight, conv bias (reduce only), BN gamma, BN
// beta. Frozen stages (FreezeStages) are left out. BN running statistics are not parameters; they are in State.
func (b *Backbone) Params() []*tensor.Dense {
	return paramValues(b.params())
}

// ReduceParams returns the 1x1 reduction's weight [S,C,1,1] and bias [S], the backbone's own tensors: the
// layer a pretrained backbone does not have, trained at the heads' learning rate when fine-tuning.
func (b *Backbone) ReduceParams() []*tensor.Dense {
	u := b.byName["reduce"]
	return []*tensor.Dense{u.weight, u.bias}
}

// NumParams returns the number of trainable scalars (conv weights and biases, BN gamma and beta), frozen stages
// left out.
func (b *Backbone) NumParams() int { return countParams(b.params()) }

// Build adds the backbone to the graph of x, a float32 [N,C,H,W] node with C = InChannels(), and returns the
// features [N,S] with the parameter nodes of the stages that are not frozen.
//
// With training, batch normalisation uses batch statistics and updates the running statistics each time the
// graph runs; without, it uses the running statistics and updates nothing. Graph shapes, the batch size
// included, are fixed here; build one graph per batch size and mode.
//
// Parameter nodes are bound to the backbone's own tensors. gorgonia's solvers (G.NewMomentum, G.NewVanillaSolver)
// update a node's value in place, so after solver.Step(G.NodesToValueGrads(built.Params)) every graph built from
// this backbone runs with the new weights, with no copying. This holds as long as nothing rebinds the nodes
// (G.Let or a machine's own value binding): use the tensors returned by Params and SetState to change weights.
func (b *Backbone) Build(g *G.ExprGraph, x *G.Node, training bool) (*Built, error) {
	if err := checkInput("backbone", x, -1, b.inChannels, -1, -1); err != nil {
		return nil, err
	}
	ps := b.allParams()
	nodes := bindParams(g, b.nodePrefix, ps)
	byName := make(map[string]*G.Node, len(ps))
	var trainable G.Nodes
	for i, p := range ps {
		byName[p.name] = nodes[i]
	}
	for _, p := range b.params() {
		trainable = append(trainable, byName[p.name])
	}
	xs := x.Shape()
	constInput := make(map[string]bool)
	for _, l := range b.ConvLayers(xs[2], xs[3]) {
		constInput[l.Name] = !l.NeedsInputGrad && !l.Frozen && l.Name != "conv1"
	}
	f := backboneGraph{b: b, nodes: byName, training: training, constInput: constInput}
	var feat *G.Node
	var err error
	switch b.arch {
	case arch.ConvNet:
		feat, err = f.convNet(x)
	case arch.ResNet18, arch.ResNet18ImageNet:
		feat, err = f.resNet18(x)
	}
	if err != nil {
		return nil, fmt.Errorf("backbone %s: %w", b.arch, err)
	}
	return &Built{Output: feat, Params: trainable}, nil
}

// backboneGraph builds one backbone into one graph.
type backboneGraph struct {
	b        *Backbone
	nodes    map[string]*G.Node // parameter nodes by state name
	training bool
	// constInput marks the trainable convolutions after frozen stages whose input gradient nothing needs
	// (ConvLayers' NeedsInputGrad); the stem keeps Conv2d's own rule for its input.
	constInput map[string]bool
}

func (f backboneGraph) convNet(x *G.Node) (*G.Node, error) {
	var err error
	for _, conv := range []string{"conv1", "conv2"} {
		if x, err = f.unit(x, conv, true); err != nil {
			return nil, err
		}
		if x, err = ops.MaxPool2(x); err != nil {
			return nil, fmt.Errorf("pool after %s: %w", conv, err)
		}
	}
	if x, err = f.unit(x, "conv3", true); err != nil {
		return nil, err
	}
	return f.reduce(x)
}

func (f backboneGraph) resNet18(x *G.Node) (*G.Node, error) {
	x, err := f.unit(x, "conv1", true)
	if err != nil {
		return nil, err
	}
	if f.b.arch == arch.ResNet18ImageNet {
		if x, err = ops.MaxPool(x, 3, 2, 1); err != nil {
			return nil, fmt.Errorf("stem max pool: %w", err)
		}
	}
	for layer := range 4 {
		for block := range 2 {
			if x, err = f.basicBlock(x, resnetBlockName(layer, block)); err != nil {
				return nil, err
			}
		}
	}
	return f.reduce(x)
}

// basicBlock computes relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), where the shortcut is x or, where
// the shape changes, bn(conv1x1(x)).
func (f backboneGraph) basicBlock(x *G.Node, name string) (*G.Node, error) {
	y, err := f.unit(x, name+".conv1", true)
	if err != nil {
		return nil, err
	}
	if y, err = f.unit(y, name+".conv2", false); err != nil {
		return nil, err
	}
	shortcut := x
	if _, ok := f.b.byName[name+".downsample.0"]; ok {
		if shortcut, err = f.unit(x, name+".downsample.0", false); err != nil {
			return nil, err
		}
	}
	// One fused op: one pass and one buffer for the sum and its ReLU.
	if y, err = ops.AddReLU(y, shortcut); err != nil {
		return nil, fmt.Errorf("%s residual: %w", name, err)
	}
	return y, nil
}

// reduce applies the 1x1 reduction conv with bias, then global average pooling to [N,S].
func (f backboneGraph) reduce(x *G.Node) (*G.Node, error) {
	x, err := f.unit(x, "reduce", false)
	if err != nil {
		return nil, err
	}
	if x, err = ops.GlobalAvgPool(x); err != nil {
		return nil, fmt.Errorf("global average pool: %w", err)
	}
	return x, nil
}

// unit applies the conv unit named conv: convolution, bias if any, then BN (with a fused ReLU when relu; in
// evaluation mode in a frozen stage).
func (f backboneGraph) unit(x *G.Node, conv string, relu bool) (*G.Node, error) {
	u := f.b.byName[conv]
	convolve := ops.Conv2d
	if f.constInput[conv] {
		convolve = ops.Conv2dConstInput
	}
	y, err := convolve(x, f.nodes[conv+".weight"], u.stride, u.pad)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", conv, err)
	}
	if u.bias != nil {
		if y, err = ops.AddChannelBias(y, f.nodes[conv+".bias"]); err != nil {
			return nil, fmt.Errorf("%s bias: %w", conv, err)
		}
	}
	if u.stats != nil {
		training := f.training && !f.b.isFrozen(u)
		if y, err = u.stats.Apply(y, f.nodes[u.bn+".weight"], f.nodes[u.bn+".bias"], training, relu); err != nil {
			return nil, fmt.Errorf("%s: %w", u.bn, err)
		}
	}
	return y, nil
}

// State returns copies of every weight and BN running statistic under the names the ONNX exporter expects
// (PyTorch / torchvision style), for each layer in forward order:
//
//	<conv>.weight [out,in,k,k], <conv>.bias [out] (reduce only),
//	<bn>.weight, <bn>.bias, <bn>.running_mean, <bn>.running_var (each [out])
//
// convnet: conv1/bn1, conv2/bn2, conv3/bn3, reduce. resnet18: conv1/bn1, layer{1..4}.{0,1}.conv{1,2}/bn{1,2},
// layer{2,3,4}.0.downsample.0 (1x1, stride 2) / downsample.1, reduce. resnet18-imagenet: the same names, with a
// 7x7 conv1.weight; they are torchvision's resnet18 state-dict names, without fc and with reduce.
func (b *Backbone) State() []safetensors.Tensor {
	var out []safetensors.Tensor
	for _, u := range b.units {
		for _, p := range u.params() {
			out = append(out, stateTensor(p.name, p.value.Shape(), p.value.Data().([]float32)))
		}
		if u.stats != nil {
			c := []int{u.stats.Channels}
			out = append(out, stateTensor(u.bn+".running_mean", c, u.stats.RunningMean),
				stateTensor(u.bn+".running_var", c, u.stats.RunningVar))
		}
	}
	return out
}

// SetState copies the tensors State names from tensors into the backbone, in place, so graphs already built use
// the new values. Every tensor must be present with State's shape and finite values (running variances also
// non-negative), and no other tensor may be present (use TrimPrefix for files holding several models). On error,
// wrapping ErrBadState and naming every bad tensor, the backbone is unchanged.
func (b *Backbone) SetState(tensors []safetensors.Tensor) error {
	r := newStateReader("backbone "+string(b.arch), tensors, "")
	for _, u := range b.units {
		r.readParams("", u.params())
		if u.stats != nil {
			c := []int{u.stats.Channels}
			r.read(u.bn+".running_mean", c, u.stats.RunningMean, false)
			r.read(u.bn+".running_var", c, u.stats.RunningVar, true)
		}
	}
	return r.commit()
}

// Clone returns a deep copy: its own weights and running statistics, unaffected by later training of b (the
// frozen previous backbone f_{t-1} of docs/method.md, "Stage I"), with b's frozen stages.
func (b *Backbone) Clone() *Backbone {
	c := &Backbone{arch: b.arch, inChannels: b.inChannels, featureDim: b.featureDim,
		width: b.width, stages: b.stages, frozen: b.frozen, byName: make(map[string]*convUnit, len(b.units)), nodePrefix: newNodePrefix("backbone")}
	for _, u := range b.units {
		cu := *u
		cu.weight, cu.bias = cloneTensor(u.weight), cloneTensor(u.bias)
		cu.gamma, cu.beta = cloneTensor(u.gamma), cloneTensor(u.beta)
		if u.stats != nil {
			stats := *u.stats
			stats.RunningMean = append([]float32(nil), u.stats.RunningMean...)
			stats.RunningVar = append([]float32(nil), u.stats.RunningVar...)
			cu.stats = &stats
		}
		c.addUnit(&cu)
	}
	return c
}
