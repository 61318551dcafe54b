package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/models/ops"
	"github.com/bicyc/bicyc/models/optim"
	"github.com/bicyc/bicyc/rundir"
)

// adapterGraph trains A on cached feature pairs (docs/method.md, Stage II step 1):
//
//	L = MSE(A(z_old), z_new) + alpha * L_ac(A(z_old))
type adapterGraph struct {
	zOld, zNew *tensor.Dense
	terms      []lossTerm
	params     G.Nodes
	vm         G.VM
}

func buildAdapterGraph(cfg config.Config, a *models.Mapper, rows, s int) (*adapterGraph, error) {
	g := G.NewGraph()
	ag := &adapterGraph{
		zOld: tensor.New(tensor.WithShape(rows, s), tensor.Of(tensor.Float32)),
		zNew: tensor.New(tensor.WithShape(rows, s), tensor.Of(tensor.Float32)),
	}
	zo := G.NewMatrix(g, tensor.Float32, G.WithShape(rows, s), G.WithName("z_old"), G.WithValue(ag.zOld))
	zn := G.NewMatrix(g, tensor.Float32, G.WithShape(rows, s), G.WithName("z_new"), G.WithValue(ag.zNew))
	bound := bindMapper(a, g)
	az, err := bound.apply(zo)
	if err != nil {
		return nil, err
	}
	align, err := ops.MeanSquaredError(az, zn)
	if err != nil {
		return nil, err
	}
	ag.terms = []lossTerm{newLossTerm("o2n", align)}
	total := align
	if cfg.Loss.AntiCollapse && cfg.AdapterAlpha() > 0 {
		ac, err := ops.AntiCollapse(az, ops.AntiCollapseOptions{Beta: cfg.Loss.Beta, Shrink: cfg.Loss.ACShrink, Jitter: cfg.Loss.ACJitter})
		if err != nil {
			return nil, err
		}
		ag.terms = append(ag.terms, newLossTerm("ac", ac))
		wac, err := weighted(ac, cfg.AdapterAlpha())
		if err != nil {
			return nil, err
		}
		if total, err = G.Add(total, wac); err != nil {
			return nil, err
		}
	}
	if _, err := G.Grad(total, bound.params...); err != nil {
		return nil, fmt.Errorf("adapter gradients: %w", err)
	}
	ag.params = bound.params
	ag.vm = G.NewTapeMachine(g, G.BindDualValues(bound.params...))
	return ag, nil
}

// trainAdapter runs epochs of SGD on A over the n cached pairs (zOld, zNew),
// in shuffled mini-batches with drop_last, at adapter.lr decayed at
// adapter.milestones (constant without), and returns the last epoch's mean
// alignment loss.
func trainAdapter(cfg config.Config, a *models.Mapper, zOld, zNew []float32, n, s, epochs int, rng *rand.Rand, progress func(epoch int, loss float64)) (float64, error) {
	rows := min(cfg.Train.BatchSize, n) // adapterStepsPerEpoch counts the steps
	if rows < 2 {
		return 0, fmt.Errorf("adapter fine-tune: %d feature rows, need at least 2", n)
	}
	ag, err := buildAdapterGraph(cfg, a, rows, s)
	if err != nil {
		return 0, err
	}
	defer ag.vm.Close()
	solver := &optim.SGD{LR: cfg.Adapter.LR, Momentum: cfg.Train.Momentum, WeightDecay: cfg.Train.WeightDecay, ClipNorm: cfg.Train.ClipNorm}
	zo, zn := ag.zOld.Data().([]float32), ag.zNew.Data().([]float32)
	var last float64
	for epoch := 0; epoch < epochs; epoch++ {
		solver.LR = StepLearningRate(cfg.Adapter.LR, cfg.Train.LRDecay, cfg.Adapter.Milestones, cfg.Train.MilestoneRounding, epoch, epochs)
		perm := rng.Perm(n)
		var sum float64
		steps := n / rows
		for b := 0; b < steps; b++ {
			for i := 0; i < rows; i++ {
				j := perm[b*rows+i]
				copy(zo[i*s:(i+1)*s], zOld[j*s:(j+1)*s])
				copy(zn[i*s:(i+1)*s], zNew[j*s:(j+1)*s])
			}
			if err := ag.vm.RunAll(); err != nil {
				return 0, err
			}
			v := ag.terms[0].current()
			for _, t := range ag.terms {
				if tv := t.current(); math.IsNaN(tv) || math.IsInf(tv, 0) {
					ag.vm.Reset()
					return 0, fmt.Errorf("adapter fine-tune: loss %s is %v at epoch %d", t.name, tv, epoch+1)
				}
			}
			err := solver.Step(G.NodesToValueGrads(ag.params))
			ag.vm.Reset()
			if err != nil {
				return 0, fmt.Errorf("adapter fine-tune: %w", err)
			}
			sum += v
		}
		last = sum / float64(steps)
		if progress != nil {
			progress(epoch, last)
		}
	}
	return last, nil
}

// mapperFunc returns A as a batched gauss.FeatureMap: a fixed-size
// evaluation graph that maps rows of features, padding the last chunk.
func mapperFunc(a *models.Mapper, s, chunk int) (gauss.FeatureMap, func(), error) {
	g := G.NewGraph()
	in := tensor.New(tensor.WithShape(chunk, s), tensor.Of(tensor.Float32))
	x := G.NewMatrix(g, tensor.Float32, G.WithShape(chunk, s), G.WithName("z_old"), G.WithValue(in))
	bound := bindMapper(a, g)
	out, err := bound.apply(x)
	if err != nil {
		return nil, nil, err
	}
	vm := G.NewTapeMachine(g)
	buf := in.Data().([]float32)
	f := func(z []float32, n int) ([]float32, error) {
		if len(z) != n*s {
			return nil, fmt.Errorf("adapter: %d values for %d rows of %d", len(z), n, s)
		}
		res := make([]float32, n*s)
		for start := 0; start < n; start += chunk {
			m := min(chunk, n-start)
			copy(buf, z[start*s:(start+m)*s])
			clear(buf[m*s:])
			if err := vm.RunAll(); err != nil {
				return nil, err
			}
			copy(res[start*s:(start+m)*s], out.Value().Data().([]float32)[:m*s])
			vm.Reset()
		}
		return res, nil
	}
	return f, func() { vm.Close() }, nil
}

// classStatistics estimates a Gaussian prototype from the rows of feats
// (docs/method.md, Stage II step 3: mean and unbiased covariance + 1e-8 I).
// A class with fewer than two feature rows gets the documented diagonal
// fallback of package gauss instead of an error.
func classStatistics(feats []float32, n, s int, priorVariance float64) (gauss.Gaussian, error) {
	if n >= 2 {
		return gauss.Estimate(feats, n, s)
	}
	return gauss.EstimateDiagonal(feats, n, s, priorVariance)
}

// featurePairs are the inputs of Stage II: the task's training images
// (idx), the backbones before (old) and after (cur) Stage I, and cur's
// features of the images, flipped copies after the originals when flips.
type featurePairs struct {
	old, cur *models.Backbone
	idx      []int
	zNew     []float32
	rows     int
	flips    bool
}

// Transport maps, in the order a tie prefers them: A is the method's own.
const (
	MapAdapter  = "adapter"
	MapEnsemble = "ensemble"
	MapIdentity = "identity"
	MapLinear   = "linear"
)

// affineRidge is FitAffine's ridge for the linear candidate: mild, so that
// with thousands of pairs the fit is the plain least-squares map.
const affineRidge = 1e-2

// stage2 fine-tunes the adapter on the task's feature pairs (adagauss:
// trains a fresh one), picks the transport map (adapter.select) and moves
// every old prototype in protos into the new feature space. It returns the
// adapter the run keeps.
func (r *Run) stage2(t int, p featurePairs, adapt *models.Mapper, protos map[int]gauss.Gaussian, rep *rundir.TaskReport) (*models.Mapper, error) {
	cfg := r.cfg
	s := cfg.Model.FeatureDim
	zOld, err := features(p.old, r.train, p.idx, r.prep, cfg.Train.EvalBatch, p.flips)
	if err != nil {
		return nil, err
	}
	anchors, anchorRep, err := r.driftAnchors(t, p, zOld, protos)
	if err != nil {
		return nil, err
	}
	rep.Anchors = anchorRep
	zOld, p = anchors.join(zOld, p)
	epochs := cfg.AdapterEpochs()
	if cfg.Method == config.MethodAdaGauss {
		// AdaGauss learns its adapter only after the task, from scratch,
		// so by default it gets the full Stage I epoch budget
		// (adapter.adagauss_epochs; the authors' code gives it half).
		if adapt, err = models.NewMapper(mapperKind(cfg.Model), s, cfg.Model.HiddenMult, r.rng("adapter", t)); err != nil {
			return nil, err
		}
		epochs = cfg.PostTaskAdapterEpochs()
	}
	if more := epochsForSteps(epochs, adapterStepsPerEpoch(cfg, p.rows), cfg.Adapter.MinSteps); more > epochs {
		r.log.printf("task %d stage II: %d feature rows give %d steps per epoch: %d epochs for adapter.min_steps %d",
			t+1, p.rows, adapterStepsPerEpoch(cfg, p.rows), more, cfg.Adapter.MinSteps)
		epochs = more
	}
	bar := r.newBar(epochs, fmt.Sprintf("task %d stage II", t+1))
	rep.AdapterLoss, err = trainAdapter(cfg, adapt, zOld, p.zNew, p.rows, s, epochs, r.rng("stage2", t), func(e int, l float64) {
		bar.Describe(fmt.Sprintf("task %d stage II  o2n %.4f", t+1, l))
		bar.Add(1)
	})
	bar.Finish()
	if err != nil {
		return nil, err
	}
	aMap, done, err := mapperFunc(adapt, s, 1000)
	if err != nil {
		return nil, err
	}
	defer done()
	var ensemble gauss.FeatureMap
	if cfg.Adapter.Ensemble > 1 {
		var release func()
		if ensemble, release, err = r.adapterEnsemble(t, p, zOld, aMap); err != nil {
			return nil, err
		}
		defer release()
	}
	choice, affine, err := r.chooseTransport(t, p, zOld, aMap, ensemble)
	if err != nil {
		return nil, err
	}
	rep.Transport = &choice
	start := time.Now()
	switch choice.Map {
	case MapAdapter:
		err = r.transport(t, aMap, protos)
	case MapEnsemble:
		err = r.transport(t, ensemble, protos)
	case MapLinear:
		err = transportAffine(affine, protos)
	}
	if err == nil && cfg.Anchors.MeanShift {
		anchors.shiftMeans(protos, s)
	}
	rep.TransportSeconds = since(start)
	return adapt, err
}

// chooseTransport scores A, the adapter ensemble (when there is one, else
// nil), the identity and the affine least-squares map (fitted on the
// task's training pairs) on the validation images of the task's classes
// and returns the best, with the affine map when it wins. Without
// adapter.select or validation images it returns the ensemble, or A,
// unscored.
func (r *Run) chooseTransport(t int, p featurePairs, zOld []float32, aMap, ensemble gauss.FeatureMap) (rundir.TransportChoice, gauss.Affine, error) {
	unscored := MapAdapter
	if ensemble != nil {
		unscored = MapEnsemble
	}
	if !r.cfg.Adapter.Select {
		return rundir.TransportChoice{Map: unscored, Reason: "adapter.select is off"}, gauss.Affine{}, nil
	}
	val := r.valIndices(r.stream.Tasks[t])
	if len(val) < 2 {
		r.log.printf("task %d transport: through %s, unchecked: %d validation images of the new classes (data.val_per_class)", t+1, unscored, len(val))
		return rundir.TransportChoice{Map: unscored, Images: len(val), Reason: "fewer than 2 validation images"}, gauss.Affine{}, nil
	}
	s := r.cfg.Model.FeatureDim
	vOld, err := features(p.old, r.train, val, r.prep, r.cfg.Train.EvalBatch, false)
	if err != nil {
		return rundir.TransportChoice{}, gauss.Affine{}, err
	}
	vNew, err := features(p.cur, r.train, val, r.prep, r.cfg.Train.EvalBatch, false)
	if err != nil {
		return rundir.TransportChoice{}, gauss.Affine{}, err
	}
	affine, err := gauss.FitAffine(zOld, p.zNew, p.rows, s, affineRidge)
	if err != nil {
		return rundir.TransportChoice{}, gauss.Affine{}, fmt.Errorf("linear transport map: %w", err)
	}
	choice := rundir.TransportChoice{Images: len(val), HeldOutMSE: map[string]float64{MapIdentity: gauss.MeanSquaredError(vOld, vNew)}}
	candidates := map[string]gauss.FeatureMap{MapAdapter: aMap, MapLinear: affine.Map}
	if ensemble != nil {
		candidates[MapEnsemble] = ensemble
	}
	for name, f := range candidates {
		out, err := f(vOld, len(val))
		if err != nil {
			return rundir.TransportChoice{}, gauss.Affine{}, fmt.Errorf("transport map %s: %w", name, err)
		}
		choice.HeldOutMSE[name] = gauss.MeanSquaredError(out, vNew)
	}
	choice.Map = MapAdapter
	for _, name := range []string{MapEnsemble, MapIdentity, MapLinear} {
		if mse, ok := choice.HeldOutMSE[name]; ok && mse < choice.HeldOutMSE[choice.Map] {
			choice.Map = name
		}
	}
	ensembleMSE := ""
	if ensemble != nil {
		ensembleMSE = fmt.Sprintf(", ensemble of %d %.4f", r.cfg.Adapter.Ensemble, choice.HeldOutMSE[MapEnsemble])
	}
	r.log.printf("task %d transport: through %s (held-out MSE on %d validation images: adapter %.4f%s, identity %.4f, linear %.4f)",
		t+1, choice.Map, len(val), choice.HeldOutMSE[MapAdapter], ensembleMSE, choice.HeldOutMSE[MapIdentity], choice.HeldOutMSE[MapLinear])
	return choice, affine, nil
}

// transport replaces every old class's prototype by its Monte Carlo
// transport through the map f, A or the adapter ensemble (docs/method.md, Stage II).
func (r *Run) transport(t int, f gauss.FeatureMap, protos map[int]gauss.Gaussian) error {
	ids := sortedClasses(protos)
	bar := r.newBar(len(ids), fmt.Sprintf("task %d transport", t+1))
	defer bar.Finish()
	for _, c := range ids {
		g, err := gauss.Transport(protos[c], f, r.cfg.Adapter.TransportSamples, r.rng(fmt.Sprintf("transport-%d", c), t))
		if err != nil {
			return fmt.Errorf("transport class %d: %w", c, err)
		}
		protos[c] = g
		bar.Add(1)
	}
	return nil
}

// transportAffine replaces every old class's prototype by its exact image
// under the affine map.
func transportAffine(a gauss.Affine, protos map[int]gauss.Gaussian) error {
	for _, c := range sortedClasses(protos) {
		g, err := a.Transport(protos[c])
		if err != nil {
			return fmt.Errorf("transport class %d: %w", c, err)
		}
		protos[c] = g
	}
	return nil
}

// adapterStepsPerEpoch is the number of steps trainAdapter makes per epoch
// on n feature rows: mini-batches of train.batch_size (all rows when
// fewer), the last partial batch dropped.
func adapterStepsPerEpoch(cfg config.Config, n int) int {
	return n / max(min(cfg.Train.BatchSize, n), 1)
}

// epochsForSteps is the number of epochs that makes at least minSteps
// steps of stepsPerEpoch each, and never fewer than epochs.
func epochsForSteps(epochs, stepsPerEpoch, minSteps int) int {
	if minSteps <= 0 || stepsPerEpoch <= 0 || epochs*stepsPerEpoch >= minSteps {
		return epochs
	}
	return (minSteps + stepsPerEpoch - 1) / stepsPerEpoch
}
