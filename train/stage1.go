package train

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/models/ops"
)

// stage1Nets are the networks trained jointly in Stage I of one task.
type stage1Nets struct {
	backbone   *models.Backbone
	head       *models.Linear
	distiller  *models.Mapper // D: new -> old; nil on task 1 and for finetune
	adapter    *models.Mapper // A: old -> new; bicyc only
	rows       int            // images per step (4x the batch with rotation)
	numClasses int            // head outputs
	hasOld     bool           // z_old is an input (task > 1 with distillation)
	detach     bool           // features detached from the backbone (warm-up)
}

// stage1Graph is the Stage I training graph of one task: inputs, named loss
// terms, their weighted total and the trained parameters.
type stage1Graph struct {
	image, onehot, zOld *tensor.Dense
	terms               []lossTerm
	total               *G.Node
	params              G.Nodes
	vm                  G.VM
}

// lossTerm is one named, unweighted loss term, reported in progress and
// logs. Its value is captured by a read node while the graph runs, because
// the term's own memory may be reused by later instructions of the tape.
type lossTerm struct {
	name  string
	value *G.Value
}

func newLossTerm(name string, n *G.Node) lossTerm {
	t := lossTerm{name: name, value: new(G.Value)}
	G.Read(n, t.value)
	return t
}

// current returns the term's value in the last run.
func (t lossTerm) current() float64 {
	if *t.value == nil {
		return math.NaN()
	}
	return scalarValue(*t.value)
}

// buildStage1 builds the Stage I graph (METHOD.md "Stage I") with this
// gradient routing, sg = stop-gradient:
//
//	CE + alpha*L_ac                         backbone, head
//	L_n2o  = MSE(D(z_new), z_old)            D and backbone
//	L_o2n  = MSE(A(z_old), sg z_new)         A only
//	L_cyc  = MSE(A(sg D(z_new)), sg z_new)   A only
//	       + MSE(D(sg A(z_old)), z_old)      D only
//	L_pair = MSE(cos(sg z_new), cos(A(z_old))) + MSE(cos(z_old), cos(D(z_new)))
//
// With loss.cycle_detach_inner false, L_cyc follows the paper's equation
// literally instead: MSE(A(D(z_new)), sg z_new) + MSE(D(A(z_old)), z_old).
// adagauss keeps only CE + kd_weight*L_n2o + alpha*L_ac.
//
// Stage1Step is its one caller outside tests: train's Stage I loop and
// bench/train both run this graph through it.
func buildStage1(cfg config.Config, n stage1Nets, c, h, w int) (*stage1Graph, error) {
	g := G.NewGraph()
	sg := &stage1Graph{
		image:  tensor.New(tensor.WithShape(n.rows, c, h, w), tensor.Of(tensor.Float32)),
		onehot: tensor.New(tensor.WithShape(n.rows, n.numClasses), tensor.Of(tensor.Float32)),
	}
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(n.rows, c, h, w), G.WithName("image"), G.WithValue(sg.image))
	onehot := G.NewMatrix(g, tensor.Float32, G.WithShape(n.rows, n.numClasses), G.WithName("onehot"), G.WithValue(sg.onehot))

	zNew, params, err := buildBackbone(n.backbone, g, x, true)
	if err != nil {
		return nil, err
	}
	if n.detach {
		if zNew, err = ops.StopGradient(zNew); err != nil {
			return nil, err
		}
		params = nil
	}
	logits, headParams, err := buildLinear(n.head, g, zNew)
	if err != nil {
		return nil, err
	}
	params = append(params, headParams...)
	ce, err := crossEntropy(logits, onehot)
	if err != nil {
		return nil, err
	}
	sg.terms = append(sg.terms, newLossTerm("ce", ce))
	weightedTerms := []*G.Node{ce}
	add := func(name string, l *G.Node, weight float64) error {
		sg.terms = append(sg.terms, newLossTerm(name, l))
		wl, err := weighted(l, weight)
		if err != nil {
			return err
		}
		weightedTerms = append(weightedTerms, wl)
		return nil
	}
	if cfg.Loss.AntiCollapse {
		ac, err := ops.AntiCollapse(zNew, ops.AntiCollapseOptions{Beta: cfg.Loss.Beta, Shrink: cfg.Loss.ACShrink, Jitter: cfg.Loss.ACJitter})
		if err != nil {
			return nil, err
		}
		if err := add("ac", ac, cfg.Loss.Alpha); err != nil {
			return nil, err
		}
	}
	if n.hasOld {
		s := n.backbone.FeatureDim()
		sg.zOld = tensor.New(tensor.WithShape(n.rows, s), tensor.Of(tensor.Float32))
		zOld := G.NewMatrix(g, tensor.Float32, G.WithShape(n.rows, s), G.WithName("z_old"), G.WithValue(sg.zOld))
		more, err := distillationTerms(cfg, n, g, zNew, zOld, add)
		if err != nil {
			return nil, err
		}
		params = append(params, more...)
	}
	if sg.total, err = sumTerms(weightedTerms...); err != nil {
		return nil, err
	}
	if _, err := G.Grad(sg.total, params...); err != nil {
		return nil, fmt.Errorf("stage I gradients: %w", err)
	}
	sg.params = params
	sg.vm = G.NewTapeMachine(g, G.BindDualValues(params...))
	return sg, nil
}

// distillationTerms adds the terms that tie the new space to the old one and
// returns the parameters of D and A.
func distillationTerms(cfg config.Config, n stage1Nets, g *G.ExprGraph, zNew, zOld *G.Node, add func(string, *G.Node, float64) error) (G.Nodes, error) {
	l := cfg.Loss
	d := bindMapper(n.distiller, g)
	dz, err := d.apply(zNew)
	if err != nil {
		return nil, err
	}
	n2o, err := mse(dz, zOld)
	if err != nil {
		return nil, err
	}
	if cfg.Method == config.MethodAdaGauss {
		return d.params, add("n2o", n2o, l.KDWeight)
	}

	a := bindMapper(n.adapter, g)
	sgNew, err := ops.StopGradient(zNew)
	if err != nil {
		return nil, err
	}
	az, err := a.apply(zOld)
	if err != nil {
		return nil, err
	}
	// Without L_bi the distiller still distils with the adagauss weight, so
	// the ablation corner "no L_bi, no L_cyc" is the AdaGauss baseline
	// (paper, "Effect of L_bi and L_cyc").
	usesA := false
	if l.Bi {
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
		usesA = true
	} else if err := add("n2o", n2o, l.KDWeight); err != nil {
		return nil, err
	}
	if l.Cyc {
		inNew, inOld := dz, az
		if l.CycleDetachInner {
			if inNew, err = ops.StopGradient(dz); err != nil {
				return nil, err
			}
			if inOld, err = ops.StopGradient(az); err != nil {
				return nil, err
			}
		}
		adz, err := a.apply(inNew)
		if err != nil {
			return nil, err
		}
		daz, err := d.apply(inOld)
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
		usesA = true
	}
	if l.Pair {
		rows := min(l.PairRows, n.rows)
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
			if pair, err = sumTerms(pair, m); err != nil {
				return nil, err
			}
		}
		if err := add("pair", pair, l.LambdaPair); err != nil {
			return nil, err
		}
		usesA = true
	}
	if !usesA {
		return d.params, nil
	}
	return append(d.params, a.params...), nil
}

// step runs one forward and backward pass and one solver update, and
// returns the unweighted value of every loss term. A NaN or infinite loss is
// an error naming the term; the parameters are not updated then.
func (sg *stage1Graph) step(solver G.Solver) ([]float64, error) {
	if err := sg.vm.RunAll(); err != nil {
		return nil, err
	}
	defer sg.vm.Reset()
	vals := make([]float64, len(sg.terms))
	for i, t := range sg.terms {
		v := t.current()
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("loss %s is %v", t.name, v)
		}
		vals[i] = v
	}
	if err := solver.Step(G.NodesToValueGrads(sg.params)); err != nil {
		return nil, err
	}
	return vals, nil
}

func (sg *stage1Graph) close() { sg.vm.Close() }

// scalarValue reads a scalar value as float64.
func scalarValue(val G.Value) float64 {
	switch v := val.Data().(type) {
	case float32:
		return float64(v)
	case float64:
		return v
	case []float32:
		return float64(v[0])
	case []float64:
		return v[0]
	}
	return math.NaN()
}
