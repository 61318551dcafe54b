package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/data"
)

// loadFashion reads Fashion-MNIST once for all the package's tests.
var loadFashion = sync.OnceValues(func() (*data.Dataset, error) {
	train, _, err := data.LoadFashionMNIST("")
	return train, err
})

// readFashion returns the first n training images of Fashion-MNIST as [n,1,28,28] float32 in [0,1] and their
// labels.
func readFashion(n int) ([]float32, []int, error) {
	train, err := loadFashion()
	if err != nil {
		return nil, nil, fmt.Errorf("%w (apt-get install dataset-fashion-mnist)", err)
	}
	if train.Len() < n {
		return nil, nil, fmt.Errorf("Fashion-MNIST has %d training images, want %d", train.Len(), n)
	}
	pix := train.Pixels[:n*28*28]
	images := make([]float32, len(pix))
	for i, p := range pix {
		images[i] = float32(p) / 255
	}
	return images, slices.Clone(train.Labels[:n]), nil
}

// convNet is the default backbone plus a linear head and softmax cross-entropy, built either from this
// package's ops or from stock gorgonia ops.
type convNet struct {
	g         *G.ExprGraph
	x, onehot *G.Node
	cost      *G.Node
	learnable G.Nodes
	bns       []*G.BatchNormOp
}

func newParam(g *G.ExprGraph, rng *rand.Rand, name string, fanIn int, shape ...int) *G.Node {
	size := 1
	for _, s := range shape {
		size *= s
	}
	data := make([]float32, size)
	for i := range data {
		data[i] = float32(rng.NormFloat64() * math.Sqrt(2/float64(fanIn))) // He initialisation
	}
	t := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
	return G.NewTensor(g, tensor.Float32, len(shape), G.WithShape(shape...), G.WithValue(t), G.WithName(name))
}

func newConstParam(g *G.ExprGraph, name string, v float32, shape ...int) *G.Node {
	size := 1
	for _, s := range shape {
		size *= s
	}
	data := make([]float32, size)
	for i := range data {
		data[i] = v
	}
	t := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
	return G.NewTensor(g, tensor.Float32, len(shape), G.WithShape(shape...), G.WithValue(t), G.WithName(name))
}

// buildConvNet builds conv3x3 1->32 pad1, BN, ReLU, maxpool; conv3x3 32->64 pad1, BN, ReLU, maxpool;
// conv3x3 64->128 pad1, BN, ReLU; conv1x1 128->64 + bias; global average pool; linear 64->10; softmax
// cross-entropy, for a batch of 28x28x1 images.
func buildConvNet(batch int, stock bool) (*convNet, error) {
	rng := rand.New(rand.NewPCG(3, 5))
	g := G.NewGraph()
	net := &convNet{g: g}
	net.x = G.NewTensor(g, tensor.Float32, 4, G.WithShape(batch, 1, 28, 28), G.WithName("x"))
	net.onehot = G.NewMatrix(g, tensor.Float32, G.WithShape(batch, 10), G.WithName("onehot"))
	h := net.x
	var err error
	chans := []int{1, 32, 64, 128}
	for i := 0; i < 3; i++ {
		cin, cout := chans[i], chans[i+1]
		w := newParam(g, rng, fmt.Sprintf("w%d", i), cin*9, cout, cin, 3, 3)
		net.learnable = append(net.learnable, w)
		block := net.opsBlock
		if stock {
			block = net.stockBlock
		}
		if h, err = block(h, w, i, cout); err != nil {
			return nil, err
		}
	}
	feat, err := net.reduce(h, rng, stock)
	if err != nil {
		return nil, err
	}
	if err := net.loss(feat, rng, batch); err != nil {
		return nil, err
	}
	return net, nil
}

// stockBlock is conv block i (conv3x3 with weight w, BN, ReLU, maxpool on
// the first two) from stock gorgonia ops.
func (net *convNet) stockBlock(h, w *G.Node, i, cout int) (*G.Node, error) {
	g := net.g
	var err error
	if h, err = G.Conv2d(h, w, tensor.Shape{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}); err != nil {
		return nil, err
	}
	gamma := newConstParam(g, fmt.Sprintf("gamma%d", i), 1, 1, cout, 1, 1)
	beta := newConstParam(g, fmt.Sprintf("beta%d", i), 0, 1, cout, 1, 1)
	var bn *G.BatchNormOp
	if h, _, _, bn, err = G.BatchNorm(h, gamma, beta, 0.1, 1e-5); err != nil {
		return nil, err
	}
	net.bns = append(net.bns, bn)
	net.learnable = append(net.learnable, gamma, beta)
	if h, err = G.Rectify(h); err != nil {
		return nil, err
	}
	if i < 2 {
		if h, err = G.MaxPool2D(h, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2}); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// opsBlock is conv block i from this package's ops.
func (net *convNet) opsBlock(h, w *G.Node, i, cout int) (*G.Node, error) {
	g := net.g
	var err error
	if h, err = Conv2d(h, w, 1, 1); err != nil {
		return nil, err
	}
	gamma := newConstParam(g, fmt.Sprintf("gamma%d", i), 1, cout)
	beta := newConstParam(g, fmt.Sprintf("beta%d", i), 0, cout)
	net.learnable = append(net.learnable, gamma, beta)
	if h, err = NewBatchNorm(cout).Apply(h, gamma, beta, true, true); err != nil {
		return nil, err
	}
	if i < 2 {
		if h, err = MaxPool2(h); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// reduce is the 1x1 conv 128->64 with bias and the global average pool.
func (net *convNet) reduce(h *G.Node, rng *rand.Rand, stock bool) (*G.Node, error) {
	g := net.g
	var err error
	w1 := newParam(g, rng, "w1x1", 128, 64, 128, 1, 1)
	net.learnable = append(net.learnable, w1)
	var feat *G.Node
	if stock {
		b1 := newConstParam(g, "b1x1", 0, 1, 64, 1, 1)
		net.learnable = append(net.learnable, b1)
		if h, err = G.Conv2d(h, w1, tensor.Shape{1, 1}, []int{0, 0}, []int{1, 1}, []int{1, 1}); err != nil {
			return nil, err
		}
		if h, err = G.BroadcastAdd(h, b1, []byte{}, []byte{0, 2, 3}); err != nil {
			return nil, err
		}
		// Two one-axis means: G.Mean(h, 2, 3) has wrong gradients in gorgonia v0.9.18 (see pool_test.go).
		if h, err = G.Mean(h, 3); err != nil {
			return nil, err
		}
		if feat, err = G.Mean(h, 2); err != nil {
			return nil, err
		}
	} else {
		b1 := newConstParam(g, "b1x1", 0, 64)
		net.learnable = append(net.learnable, b1)
		if h, err = Conv2d(h, w1, 1, 0); err != nil {
			return nil, err
		}
		if h, err = AddChannelBias(h, b1); err != nil {
			return nil, err
		}
		if feat, err = GlobalAvgPool(h); err != nil {
			return nil, err
		}
	}
	return feat, nil
}

// loss adds the linear 64->10 head, the softmax cross-entropy and its
// gradients.
func (net *convNet) loss(feat *G.Node, rng *rand.Rand, batch int) error {
	g := net.g
	wl := newParam(g, rng, "wfc", 64, 64, 10)
	bl := newConstParam(g, "bfc", 0, 1, 10)
	net.learnable = append(net.learnable, wl, bl)
	logits, err := G.Mul(feat, wl)
	if err != nil {
		return err
	}
	if logits, err = G.BroadcastAdd(logits, bl, nil, []byte{0}); err != nil {
		return err
	}
	prob, err := G.SoftMax(logits)
	if err != nil {
		return err
	}
	logp, err := G.Log(prob)
	if err != nil {
		return err
	}
	picked, err := G.HadamardProd(logp, net.onehot)
	if err != nil {
		return err
	}
	sum, err := G.Sum(picked)
	if err != nil {
		return err
	}
	if net.cost, err = G.Div(sum, G.NewConstant(float32(-batch))); err != nil {
		return err
	}
	if _, err = G.Grad(net.cost, net.learnable...); err != nil {
		return err
	}
	return nil
}

// trainer runs SGD steps of a convNet on one fixed batch.
type trainer struct {
	net    *convNet
	vm     G.VM
	solver G.Solver
}

func newTrainer(net *convNet, images []float32, labels []int) (*trainer, error) {
	batch := len(labels)
	onehot := make([]float32, batch*10)
	for i, l := range labels {
		onehot[i*10+l] = 1
	}
	if err := G.Let(net.x, tensor.New(tensor.WithShape(batch, 1, 28, 28), tensor.WithBacking(images))); err != nil {
		return nil, err
	}
	if err := G.Let(net.onehot, tensor.New(tensor.WithShape(batch, 10), tensor.WithBacking(onehot))); err != nil {
		return nil, err
	}
	return &trainer{
		net:    net,
		vm:     G.NewTapeMachine(net.g, G.BindDualValues(net.learnable...)),
		solver: G.NewVanillaSolver(G.WithLearnRate(0.1)),
	}, nil
}

// step runs forward, backward and one SGD update, and returns the loss.
func (tr *trainer) step() (float32, error) {
	defer tr.vm.Reset()
	if err := tr.vm.RunAll(); err != nil {
		return 0, err
	}
	loss := tr.net.cost.Value().Data().(float32)
	return loss, tr.solver.Step(G.NodesToValueGrads(tr.net.learnable))
}

// TestConvNetMatchesStock trains the default backbone for a few SGD steps on real images, once built from
// this package's ops and once from stock gorgonia ops: the losses must agree step by step and decrease.
func TestConvNetMatchesStock(t *testing.T) {
	const batch, steps = 32, 4
	images, labels, err := readFashion(batch)
	if err != nil {
		t.Fatal(err)
	}
	var losses [2][steps]float32
	for v, stock := range []bool{false, true} {
		net, err := buildConvNet(batch, stock)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := newTrainer(net, images, labels)
		if err != nil {
			t.Fatal(err)
		}
		for s := range steps {
			if losses[v][s], err = tr.step(); err != nil {
				t.Fatal(err)
			}
		}
		tr.vm.Close()
	}
	t.Logf("losses: ops %v, stock %v", losses[0], losses[1])
	for s := range steps {
		// gorgonia's BatchNorm normalises with a slightly different variance estimate: allow 1e-3.
		if d := math.Abs(float64(losses[0][s] - losses[1][s])); d > 1e-3*float64(losses[1][s]) {
			t.Errorf("step %d: loss %g with ops, %g with stock ops", s, losses[0][s], losses[1][s])
		}
	}
	if !(losses[0][steps-1] < 0.9*losses[0][0]) {
		t.Errorf("loss went from %g to %g in %d steps, want a decrease of at least 10%%", losses[0][0], losses[0][steps-1], steps)
	}
}
