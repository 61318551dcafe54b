package main

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/models/ops"
	"github.com/bicyc/bicyc/train"
)

// nets are the networks one benchmark step trains. For the BiCyc step all
// are set; the plain step (ResNet-18) has only backbone and head.
type nets struct {
	backbone, old        *models.Backbone // old: the frozen f_{t-1}
	head                 *models.Linear
	distiller, adapter   *models.Mapper
	batch, classes       int
	channels, side, dims int // image C, H = W, and S
}

// stepGraph is one training step: inputs, named loss terms, the trained
// parameters and the machines that run them.
//
// It rebuilds package train's unexported Stage I graph (train/stage1.go
// buildStage1, train/losses.go) from the same exported parts, package
// models and models/ops, because train does not export it; the formulas
// below are train's, with config.Default's loss weights (METHOD.md):
//
//	total  = CE + alpha*L_ac + lambda_bi*(L_n2o + L_o2n) + lambda_cyc*L_cyc + lambda_pair*L_pair
//	L_n2o  = MSE(D(z_new), z_old)            D and backbone
//	L_o2n  = MSE(A(z_old), sg z_new)         A only
//	L_cyc  = MSE(A(sg D(z_new)), sg z_new) + MSE(D(sg A(z_old)), z_old)
//	L_pair = MSE(cos(sg z_new), cos(A(z_old))) + MSE(cos(z_old), cos(D(z_new)))
//
// with z_old from the frozen old backbone's evaluation-mode graph, run
// before every step as train does. Without an old backbone the step is the
// plain one, backbone + head + CE (the ResNet-18 comparison).
type stepGraph struct {
	image, onehot, zOld *tensor.Dense
	terms               []lossTerm
	params              G.Nodes
	vm                  G.VM
	old                 *extractor // nil for the plain step
	solver              *train.SGD
}

// lossTerm is one named, unweighted loss term; its value is captured by a
// read node while the graph runs (train/stage1.go lossTerm).
type lossTerm struct {
	name  string
	value *G.Value
}

func newLossTerm(name string, n *G.Node) lossTerm {
	t := lossTerm{name: name, value: new(G.Value)}
	G.Read(n, t.value)
	return t
}

// buildStep builds the step of n: the BiCyc Stage I step when n.old is
// set, else backbone + head + CE.
func buildStep(n nets) (*stepGraph, error) {
	cfg := config.Default()
	l := cfg.Loss
	g := G.NewGraph()
	sg := &stepGraph{
		image:  tensor.New(tensor.WithShape(n.batch, n.channels, n.side, n.side), tensor.Of(tensor.Float32)),
		onehot: tensor.New(tensor.WithShape(n.batch, n.classes), tensor.Of(tensor.Float32)),
		solver: &train.SGD{LR: cfg.Train.LR, Momentum: cfg.Train.Momentum, WeightDecay: cfg.Train.WeightDecay, ClipNorm: cfg.Train.ClipNorm},
	}
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(sg.image.Shape()...), G.WithName("image"), G.WithValue(sg.image))
	onehot := G.NewMatrix(g, tensor.Float32, G.WithShape(n.batch, n.classes), G.WithName("onehot"), G.WithValue(sg.onehot))
	built, err := n.backbone.Build(g, x, true)
	if err != nil {
		return nil, err
	}
	zNew := built.Output
	params := built.Params
	hb, err := n.head.Build(g, zNew)
	if err != nil {
		return nil, err
	}
	params = append(params, hb.Params...)
	ce, err := crossEntropy(hb.Output, onehot)
	if err != nil {
		return nil, err
	}
	sg.terms = append(sg.terms, newLossTerm("ce", ce))
	total := ce
	add := func(name string, term *G.Node, weight float64) error {
		sg.terms = append(sg.terms, newLossTerm(name, term))
		w, err := G.Mul(term, G.NewConstant(float32(weight)))
		if err != nil {
			return err
		}
		total, err = G.Add(total, w)
		return err
	}
	if n.old != nil {
		ac, err := ops.AntiCollapse(zNew, ops.AntiCollapseOptions{Beta: l.Beta, Shrink: l.ACShrink, Jitter: l.ACJitter})
		if err != nil {
			return nil, err
		}
		if err := add("ac", ac, l.Alpha); err != nil {
			return nil, err
		}
		sg.zOld = tensor.New(tensor.WithShape(n.batch, n.dims), tensor.Of(tensor.Float32))
		zOld := G.NewMatrix(g, tensor.Float32, G.WithShape(n.batch, n.dims), G.WithName("z_old"), G.WithValue(sg.zOld))
		more, err := distillationTerms(l, n, g, zNew, zOld, add)
		if err != nil {
			return nil, err
		}
		params = append(params, more...)
		if sg.old, err = newExtractor(n.old, n.batch, n.channels, n.side); err != nil {
			return nil, err
		}
	}
	if _, err := G.Grad(total, params...); err != nil {
		return nil, fmt.Errorf("gradients: %w", err)
	}
	sg.params = params
	sg.vm = G.NewTapeMachine(g, G.BindDualValues(params...))
	return sg, nil
}

// distillationTerms adds L_n2o, L_o2n, L_cyc and L_pair with train's
// gradient routing (cycle_detach_inner on) and returns the parameters of D
// and A.
func distillationTerms(l config.Loss, n nets, g *G.ExprGraph, zNew, zOld *G.Node, add func(string, *G.Node, float64) error) (G.Nodes, error) {
	var params G.Nodes
	apply := func(m *models.Mapper, x *G.Node, first bool) (*G.Node, error) {
		b, err := m.Build(g, x)
		if err != nil {
			return nil, err
		}
		if first {
			params = append(params, b.Params...)
		}
		return b.Output, nil
	}
	dz, err := apply(n.distiller, zNew, true)
	if err != nil {
		return nil, err
	}
	az, err := apply(n.adapter, zOld, true)
	if err != nil {
		return nil, err
	}
	sgNew, err := ops.StopGradient(zNew)
	if err != nil {
		return nil, err
	}
	n2o, err := mse(dz, zOld)
	if err != nil {
		return nil, err
	}
	o2n, err := mse(az, sgNew)
	if err != nil {
		return nil, err
	}
	if err := add("n2o", n2o, l.LambdaBi); err != nil {
		return nil, err
	}
	if err := add("o2n", o2n, l.LambdaBi); err != nil {
		return nil, err
	}
	sgD, err := ops.StopGradient(dz)
	if err != nil {
		return nil, err
	}
	sgA, err := ops.StopGradient(az)
	if err != nil {
		return nil, err
	}
	adz, err := apply(n.adapter, sgD, false)
	if err != nil {
		return nil, err
	}
	daz, err := apply(n.distiller, sgA, false)
	if err != nil {
		return nil, err
	}
	c1, err := mse(adz, sgNew)
	if err != nil {
		return nil, err
	}
	c2, err := mse(daz, zOld)
	if err != nil {
		return nil, err
	}
	cyc, err := G.Add(c1, c2)
	if err != nil {
		return nil, err
	}
	if err := add("cyc", cyc, l.LambdaCyc); err != nil {
		return nil, err
	}
	rows := min(l.PairRows, n.batch)
	var pair *G.Node
	for _, p := range [][2]*G.Node{{sgNew, az}, {zOld, dz}} {
		ca, err := cosineMatrix(p[0], rows)
		if err != nil {
			return nil, err
		}
		cb, err := cosineMatrix(p[1], rows)
		if err != nil {
			return nil, err
		}
		m, err := mse(ca, cb)
		if err != nil {
			return nil, err
		}
		if pair == nil {
			pair = m
		} else if pair, err = G.Add(pair, m); err != nil {
			return nil, err
		}
	}
	return params, add("pair", pair, l.LambdaPair)
}

// step runs the frozen old backbone on the batch in sg.image (when there
// is one), one forward and backward pass and one SGD update, and returns
// the unweighted loss terms, computed before the update.
func (sg *stepGraph) step() ([]float64, error) {
	if sg.old != nil {
		if err := sg.old.run(sg.image.Data().([]float32), sg.zOld.Data().([]float32)); err != nil {
			return nil, err
		}
	}
	if err := sg.vm.RunAll(); err != nil {
		return nil, err
	}
	defer sg.vm.Reset()
	vals := make([]float64, len(sg.terms))
	for i, t := range sg.terms {
		v, ok := scalar(*t.value)
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("loss %s is %v", t.name, *t.value)
		}
		vals[i] = v
	}
	return vals, sg.solver.Step(G.NodesToValueGrads(sg.params))
}

func (sg *stepGraph) close() {
	sg.vm.Close()
	if sg.old != nil {
		sg.old.vm.Close()
	}
}

func scalar(v G.Value) (float64, bool) {
	if v == nil {
		return 0, false
	}
	switch d := v.Data().(type) {
	case float32:
		return float64(d), true
	case []float32:
		return float64(d[0]), len(d) == 1
	}
	return 0, false
}

// extractor runs a backbone in evaluation mode on a fixed-size batch
// (train/features.go extractor).
type extractor struct {
	input  *tensor.Dense
	output *G.Node
	vm     G.VM
}

func newExtractor(b *models.Backbone, batch, c, side int) (*extractor, error) {
	g := G.NewGraph()
	in := tensor.New(tensor.WithShape(batch, c, side, side), tensor.Of(tensor.Float32))
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(batch, c, side, side), G.WithName("image"), G.WithValue(in))
	built, err := b.Build(g, x, false)
	if err != nil {
		return nil, err
	}
	return &extractor{input: in, output: built.Output, vm: G.NewTapeMachine(g)}, nil
}

// run computes the features of the images x into dst.
func (e *extractor) run(x, dst []float32) error {
	copy(e.input.Data().([]float32), x)
	if err := e.vm.RunAll(); err != nil {
		return err
	}
	defer e.vm.Reset()
	copy(dst, e.output.Value().Data().([]float32))
	return nil
}

// crossEntropy is train's mean softmax cross-entropy against one-hot
// targets:
//
//	CE = -(1/B) sum_b sum_k onehot[b,k] * log softmax(logits)[b,k]
func crossEntropy(logits, onehot *G.Node) (*G.Node, error) {
	logp, err := G.LogSoftMax(logits)
	if err != nil {
		return nil, err
	}
	picked, err := G.HadamardProd(logp, onehot)
	if err != nil {
		return nil, err
	}
	sum, err := G.Sum(picked)
	if err != nil {
		return nil, err
	}
	return G.Mul(sum, G.NewConstant(float32(-1)/float32(logits.Shape()[0])))
}

// mse is the mean squared error over batch and features.
func mse(a, b *G.Node) (*G.Node, error) {
	d, err := G.Sub(a, b)
	if err != nil {
		return nil, err
	}
	sq, err := G.Square(d)
	if err != nil {
		return nil, err
	}
	return G.Mean(sq)
}

// cosineMatrix is the matrix of pairwise cosine similarities of the first
// rows rows of x [B,S] (train/losses.go):
//
//	C = Xn Xn^T,  Xn[i] = x[i] / sqrt(||x[i]||^2 + 1e-12)
func cosineMatrix(x *G.Node, rows int) (*G.Node, error) {
	var err error
	if rows < x.Shape()[0] {
		if x, err = G.Slice(x, G.S(0, rows)); err != nil {
			return nil, err
		}
	}
	sq, err := G.Square(x)
	if err != nil {
		return nil, err
	}
	ss, err := G.Sum(sq, 1)
	if err != nil {
		return nil, err
	}
	if ss, err = G.Add(ss, G.NewConstant(float32(1e-12))); err != nil {
		return nil, err
	}
	norm, err := G.Sqrt(ss)
	if err != nil {
		return nil, err
	}
	if norm, err = G.Reshape(norm, tensor.Shape{x.Shape()[0], 1}); err != nil {
		return nil, err
	}
	xn, err := G.BroadcastHadamardDiv(x, norm, nil, []byte{1})
	if err != nil {
		return nil, err
	}
	xt, err := G.Transpose(xn)
	if err != nil {
		return nil, err
	}
	return G.Mul(xn, xt)
}
