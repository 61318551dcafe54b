package train

import (
	"context"
	"fmt"
	"math"
	"time"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
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
	frozenBN   bool           // BatchNorm in evaluation mode (Stage1Input.FrozenBatchNorm)
	rehearsal  *Rehearsal     // loss.rehearsal; nil when off
	outliers   int            // outlier rows after the real ones (loss.outlier_exposure); 0 when off
	projection *Projection    // train.contrastive_weight on task 1; nil when off
}

// stage1Graph is the Stage I training graph of one task: inputs, named loss
// terms, their weighted total and the trained parameters.
type stage1Graph struct {
	image, onehot, zOld *tensor.Dense
	pseudo, onehotSeen  *tensor.Dense // rehearsal inputs; nil without it
	terms               []lossTerm
	pairRows            *pairSelection // random L_pair rows; nil when it takes the first rows
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

// buildStage1 builds the Stage I graph (docs/method.md, Stage I) with this
// gradient routing, sg = stop-gradient:
//
//	CE + alpha*L_ac                         backbone, head
//	L_ssl  = NT-Xent(P(z_new))               backbone, projection P (task 1, train.contrastive_weight)
//	L_n2o  = MSE(D(z_new), z_old)            D and backbone
//	L_o2n  = MSE(A(z_old), sg z_new)         A only
//	L_cyc  = MSE(A(sg D(z_new)), sg z_new)   A only
//	       + MSE(D(sg A(z_old)), z_old)      D only
//	L_pair = MSE(cos(sg z_new), cos(A(z_old))) + MSE(cos(z_old), cos(D(z_new)))
//
// With loss.cycle_detach_inner false, L_cyc follows the paper's equation
// literally instead: MSE(A(D(z_new)), sg z_new) + MSE(D(A(z_old)), z_old).
// With loss.outlier_exposure, the outlier rows follow the real ones through
// the backbone and the head, and
//
//	L_oe = CE(H(z_out), uniform)             backbone, head
//
// while every other term sees the real rows only.
// adagauss keeps only CE + kd_weight*L_n2o + alpha*L_ac. With
// loss.rehearsal, L_pr (see Rehearsal) trains its head, and the backbone
// through the real features unless loss.rehearsal.backbone is false.
//
// Stage1Step is its one caller outside tests: train's Stage I loop and
// bench/train both run this graph through it.
func buildStage1(cfg config.Config, n stage1Nets, c, h, w int) (*stage1Graph, error) {
	g := G.NewGraph()
	all := n.rows + n.outliers
	sg := &stage1Graph{
		image:  tensor.New(tensor.WithShape(all, c, h, w), tensor.Of(tensor.Float32)),
		onehot: tensor.New(tensor.WithShape(n.rows, n.numClasses), tensor.Of(tensor.Float32)),
	}
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(all, c, h, w), G.WithName("image"), G.WithValue(sg.image))
	onehot := G.NewMatrix(g, tensor.Float32, G.WithShape(n.rows, n.numClasses), G.WithName("onehot"), G.WithValue(sg.onehot))

	zNew, logits, outLogits, params, err := forwardRows(n, g, x)
	if err != nil {
		return nil, err
	}
	ce, err := ops.CrossEntropy(logits, onehot)
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
	if err := contrastiveTerm(cfg, n.projection, g, zNew, &params, add); err != nil {
		return nil, err
	}
	if n.hasOld {
		s := n.backbone.FeatureDim()
		sg.zOld = tensor.New(tensor.WithShape(n.rows, s), tensor.Of(tensor.Float32))
		zOld := G.NewMatrix(g, tensor.Float32, G.WithShape(n.rows, s), G.WithName("z_old"), G.WithValue(sg.zOld))
		if cfg.Loss.Pair && cfg.Loss.PairSampling == config.PairSamplingRandom && n.rows > cfg.Loss.PairRows {
			sg.pairRows = newPairSelection(g, cfg.Loss.PairRows, n.rows)
		}
		more, err := distillationTerms(cfg, n, g, zNew, zOld, sg.pairRows, add)
		if err != nil {
			return nil, err
		}
		params = append(params, more...)
	}
	if n.rehearsal != nil {
		more, err := rehearsalTerm(cfg, n, g, sg, zNew, add)
		if err != nil {
			return nil, err
		}
		params = append(params, more...)
	}
	if outLogits != nil {
		oe, err := outlierExposure(g, outLogits)
		if err != nil {
			return nil, err
		}
		if err := add("oe", oe, cfg.Loss.OutlierExposure); err != nil {
			return nil, err
		}
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

// forwardRows builds the backbone (detached during the warm-up) and the head
// on the image rows x and returns the real rows' features and logits, the
// outlier rows' logits (nil without outliers) and the trained parameters.
func forwardRows(n stage1Nets, g *G.ExprGraph, x *G.Node) (zNew, logits, outLogits *G.Node, params G.Nodes, err error) {
	if zNew, params, err = buildBackbone(n.backbone, g, x, !n.frozenBN); err != nil {
		return nil, nil, nil, nil, err
	}
	if n.detach {
		if zNew, err = ops.StopGradient(zNew); err != nil {
			return nil, nil, nil, nil, err
		}
		params = nil
	}
	logits, headParams, err := buildLinear(n.head, g, zNew)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	params = append(params, headParams...)
	if n.outliers == 0 {
		return zNew, logits, nil, params, nil
	}
	all := n.rows + n.outliers
	if outLogits, err = G.Slice(logits, G.S(n.rows, all)); err != nil {
		return nil, nil, nil, nil, err
	}
	if zNew, err = G.Slice(zNew, G.S(0, n.rows)); err != nil {
		return nil, nil, nil, nil, err
	}
	if logits, err = G.Slice(logits, G.S(0, n.rows)); err != nil {
		return nil, nil, nil, nil, err
	}
	return zNew, logits, outLogits, params, nil
}

// distillationTerms adds the terms that tie the new space to the old one and
// returns the parameters of D and A.
func distillationTerms(cfg config.Config, n stage1Nets, g *G.ExprGraph, zNew, zOld *G.Node, pairRows *pairSelection, add func(string, *G.Node, float64) error) (G.Nodes, error) {
	l := cfg.Loss
	d := bindMapper(n.distiller, g)
	dz, err := d.apply(zNew)
	if err != nil {
		return nil, err
	}
	n2o, err := ops.MeanSquaredError(dz, zOld)
	if err != nil {
		return nil, err
	}
	if cfg.Method == config.MethodAdaGauss {
		return d.params, add("n2o", n2o, l.KDWeight)
	}
	m := mappedFeatures{d: d, a: bindMapper(n.adapter, g), zOld: zOld, dz: dz}
	if m.sgNew, err = ops.StopGradient(zNew); err != nil {
		return nil, err
	}
	if m.az, err = m.a.apply(zOld); err != nil {
		return nil, err
	}
	// Without L_bi the distiller still distils with the adagauss weight, so
	// the ablation corner "no L_bi, no L_cyc" is the AdaGauss baseline
	// (paper, "Effect of L_bi and L_cyc").
	if !l.Bi {
		err = add("n2o", n2o, l.KDWeight)
	} else {
		var o2n *G.Node
		if o2n, err = ops.MeanSquaredError(m.az, m.sgNew); err == nil {
			if err = add("n2o", n2o, l.LambdaBi); err == nil {
				err = add("o2n", o2n, l.LambdaBi)
			}
		}
	}
	if err == nil && l.Cyc {
		var cyc *G.Node
		if cyc, err = m.cycle(l.CycleDetachInner); err == nil {
			err = add("cyc", cyc, l.LambdaCyc)
		}
	}
	if err == nil && l.Pair {
		var pair *G.Node
		if pair, err = m.pair(min(l.PairRows, n.rows), pairRows); err == nil {
			err = add("pair", pair, l.LambdaPair)
		}
	}
	if err != nil {
		return nil, err
	}
	if !l.Bi && !l.Cyc && !l.Pair {
		return d.params, nil
	}
	return append(d.params, m.a.params...), nil
}

// mappedFeatures are the nodes the bicyc terms share: D and A bound to the
// graph, sg z_new, z_old, D(z_new) and A(z_old).
type mappedFeatures struct {
	d, a                *boundMapper
	sgNew, zOld, dz, az *G.Node
}

// cycle is L_cyc = MSE(A(D(z_new)), sg z_new) + MSE(D(A(z_old)), z_old),
// with the inner maps detached when detachInner (the authors' code).
func (m mappedFeatures) cycle(detachInner bool) (*G.Node, error) {
	inNew, inOld := m.dz, m.az
	var err error
	if detachInner {
		if inNew, err = ops.StopGradient(m.dz); err != nil {
			return nil, err
		}
		if inOld, err = ops.StopGradient(m.az); err != nil {
			return nil, err
		}
	}
	adz, err := m.a.apply(inNew)
	if err != nil {
		return nil, err
	}
	daz, err := m.d.apply(inOld)
	if err != nil {
		return nil, err
	}
	c1, err := ops.MeanSquaredError(adz, m.sgNew)
	if err != nil {
		return nil, err
	}
	c2, err := ops.MeanSquaredError(daz, m.zOld)
	if err != nil {
		return nil, err
	}
	return G.Add(c1, c2)
}

// pair is L_pair on rows rows: the MSE between the cosine similarity
// matrices of sg z_new and A(z_old), plus that of z_old and D(z_new). Each
// term takes the rows its selection picks (loss.pair_sampling random), or
// the first rows rows when sel is nil.
func (m mappedFeatures) pair(rows int, sel *pairSelection) (*G.Node, error) {
	var pair *G.Node
	for i, p := range [][2]*G.Node{{m.sgNew, m.az}, {m.zOld, m.dz}} {
		var c [2]*G.Node
		for j, x := range p {
			x, err := sel.pick(i, x)
			if err != nil {
				return nil, err
			}
			if c[j], err = cosineMatrix(x, rows); err != nil {
				return nil, err
			}
		}
		ca, cb := c[0], c[1]
		d, err := ops.MeanSquaredError(ca, cb)
		if err != nil {
			return nil, err
		}
		if pair, err = sumTerms(pair, d); err != nil {
			return nil, err
		}
	}
	return pair, nil
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

// stage1Loop is the state of one task's Stage I epochs: the step, the
// batches and their buffers, and what the log reports.
type stage1Loop struct {
	t, epochs, batch, copies int
	views                    int // 2 with a contrastive projection head: Run takes each image's second view too
	step                     *Stage1Step
	batcher                  *data.Batcher
	local                    map[int]int // class id -> head output
	x                        []float32
	labels                   []int
	images                   int
}

// stage1 trains the backbone, a fresh head and (t > 1) D and A on task t's
// images; it returns the last epoch's mean loss terms and the number of
// images processed. A small task gets more epochs when a step floor is set
// (train.min_steps_first on task 1, train.min_steps later).
func (r *Run) stage1(ctx context.Context, t int, cur, old *models.Backbone, dist, adapt *models.Mapper, idx []int) (map[string]float64, int, error) {
	cfg := r.cfg
	classes := r.stream.Tasks[t]
	epochs, lr, minSteps := cfg.Train.Epochs, cfg.Train.LR, cfg.Train.MinSteps
	if t == 0 {
		epochs, lr, minSteps = cfg.Train.EpochsFirst, cfg.Train.LRFirst, cfg.Train.MinStepsFirst
	}
	rotation := t == 0 && cfg.Train.Rotation
	batch := cfg.Train.BatchSize
	if rotation && cfg.Train.RotationSplitBatch {
		batch /= 4
	}
	batch = min(batch, len(idx))
	if batch < 2 {
		return nil, 0, fmt.Errorf("task %d has %d training images, need at least 2", t+1, len(idx))
	}
	if more := epochsForSteps(epochs, len(idx)/batch, minSteps); more > epochs {
		r.log.printf("task %d: %d images give %d steps per epoch: %d epochs for a floor of %d steps (train.min_steps%s)",
			t+1, len(idx), len(idx)/batch, more, minSteps, map[bool]string{true: "_first"}[t == 0])
		epochs = more
	}
	l := &stage1Loop{t: t, epochs: epochs, batch: batch, copies: 1, views: 1, local: make(map[int]int, len(classes))}
	if rotation {
		l.copies = 4
	}
	c, h, w := r.train.Channels, r.train.Height, r.train.Width
	head := models.NewLinear(cfg.Model.FeatureDim, len(classes)*l.copies, true, r.rng("head", t))
	var projection *Projection
	if rotation && cfg.Train.ContrastiveWeight > 0 {
		projection, l.views = NewProjection(cfg.Model.FeatureDim, r.rng("projection", t)), 2
	}
	var err error
	var rehearsal *Rehearsal
	if old != nil {
		rehearsal = r.rehearsal(t, batch, classes)
	}
	l.step, err = NewStage1Step(cfg, Stage1Nets{Backbone: cur, Old: old, Head: head, Distiller: dist, Adapter: adapt, Rehearsal: rehearsal, Projection: projection},
		Stage1Input{Batch: batch, Channels: c, Height: h, Width: w, Rotation: rotation, FrozenBatchNorm: t > 0 && cfg.Train.FreezeBNStats,
			PairSeed: r.seed("pair-rows", t), OutlierSeed: r.seed("outliers", t), ContrastiveSeed: r.seed("contrastive", t)})
	if err != nil {
		return nil, 0, err
	}
	defer l.step.Close()
	for i, cl := range classes {
		l.local[cl] = i
	}
	l.batcher = data.NewBatcher(r.train, idx, data.BatchOptions{
		BatchSize: batch, Shuffle: true, DropLast: true, Seed: r.seed("batches", t), Augment: r.augment, Preprocess: r.prep,
	})
	l.x, l.labels = make([]float32, l.views*batch*c*h*w), make([]int, batch)
	warmup := int(cfg.Train.DetachWarmup * float64(epochs))
	var last map[string]float64
	for epoch := 0; epoch < epochs; epoch++ {
		l.step.SetWarmup(epoch < warmup)
		if last, err = r.stage1Epoch(ctx, l, epoch, StepLearningRate(lr, cfg.Train.LRDecay, cfg.Train.Milestones, cfg.Train.MilestoneRounding, epoch, epochs)); err != nil {
			return nil, 0, err
		}
	}
	return last, l.images, nil
}

// stage1Epoch runs one epoch of l at learning rate lr and returns its mean
// loss terms.
func (r *Run) stage1Epoch(ctx context.Context, l *stage1Loop, epoch int, lr float64) (map[string]float64, error) {
	terms := l.step.Terms()
	l.batcher.Epoch(epoch)
	bar := r.newBar(l.batcher.NumBatches(), fmt.Sprintf("task %d stage I epoch %d/%d", l.t+1, epoch+1, l.epochs))
	sums := make([]float64, len(terms))
	steps := 0
	start := time.Now()
	pixels := len(l.x) / (l.views * l.batch)
	for {
		if err := ctx.Err(); err != nil {
			bar.Finish()
			return nil, err
		}
		n, ok := l.batcher.Next(l.x, l.labels)
		if !ok {
			break
		}
		for i := range l.labels[:n] {
			l.labels[i] = l.local[l.labels[i]]
		}
		if l.views == 2 {
			// DropLast: n is the batch, so the second views follow the first ones.
			l.batcher.SecondView(l.x[n*pixels:])
		}
		vals, err := l.step.Run(l.x[:l.views*n*pixels], l.labels[:n], lr)
		if err != nil {
			bar.Finish()
			return nil, fmt.Errorf("stage I epoch %d step %d: %w", epoch+1, steps+1, err)
		}
		for i, v := range vals {
			sums[i] += v
		}
		steps++
		l.images += n * l.copies
		bar.Describe(fmt.Sprintf("task %d stage I epoch %d/%d  %s  %.0f img/s", l.t+1, epoch+1, l.epochs,
			termString(terms, sums, steps), float64(steps*n*l.copies)/time.Since(start).Seconds()))
		bar.Add(1)
	}
	bar.Finish()
	last := map[string]float64{}
	for i, name := range terms {
		last[name] = sums[i] / float64(max(steps, 1))
	}
	// Many short epochs (a small task under train.min_steps) log about ten
	// lines, not one per epoch.
	if every := (l.epochs + 9) / 10; l.epochs <= 20 || (epoch+1)%every == 0 || epoch+1 == l.epochs {
		r.log.printf("task %d epoch %d/%d lr %.4g: %s (%.0f img/s)", l.t+1, epoch+1, l.epochs, lr,
			termString(terms, sums, steps), float64(steps*l.batch*l.copies)/time.Since(start).Seconds())
	}
	return last, nil
}
