package train

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/models/ops"
	"github.com/bicyc/bicyc/rundir"
)

// anchorSet holds the anchors of one task: for each old class in classes,
// count rows of features under the old (zOld) and the current (zNew)
// backbone, in the order of classes, and the class means they aimed at.
type anchorSet struct {
	classes    []int
	count      int
	means      map[int][]float64
	zOld, zNew []float32
}

func (a anchorSet) rows() int { return a.count * len(a.classes) }

// join appends the anchor pairs to the task's feature pairs (zOld and
// p.zNew, p.rows), the data the adapter and the linear transport map are
// fitted on. Without anchors it returns its arguments unchanged.
func (a anchorSet) join(zOld []float32, p featurePairs) ([]float32, featurePairs) {
	if a.rows() == 0 {
		return zOld, p
	}
	p.zNew = slices.Concat(p.zNew, a.zNew)
	p.rows += a.rows()
	return slices.Concat(zOld, a.zOld), p
}

// shiftMeans sets the mean of every old class in protos to its stored mean
// plus the mean drift of its anchors, mean(f_t(x) - f_{t-1}(x)) (ADC's
// compensation); covariances are kept.
func (a anchorSet) shiftMeans(protos map[int]gauss.Gaussian, s int) {
	for k, c := range a.classes {
		mean := slices.Clone(a.means[c])
		for i := k * a.count; i < (k+1)*a.count; i++ {
			for j := range s {
				mean[j] += float64(a.zNew[i*s+j]-a.zOld[i*s+j]) / float64(a.count)
			}
		}
		g := protos[c]
		g.Mean = mean
		protos[c] = g
	}
}

// driftAnchors makes anchors.per_class anchors for every old class in
// protos from the task's training images p.idx (never an old image): each
// search starts from current images (anchors.start; zOld holds their old
// features, originals first) and takes anchors.steps signed-gradient steps
// through the old backbone toward the class mean. It returns no anchors
// when anchors.per_class is 0.
func (r *Run) driftAnchors(t int, p featurePairs, zOld []float32, protos map[int]gauss.Gaussian) (anchorSet, *rundir.AnchorReport, error) {
	cfg := r.cfg.Anchors
	k := min(cfg.PerClass, len(p.idx))
	if k == 0 || len(protos) == 0 {
		return anchorSet{}, nil, nil
	}
	start := time.Now()
	search, err := r.newAnchorNets(p, min(k, r.cfg.Train.EvalBatch))
	if err != nil {
		return anchorSet{}, nil, err
	}
	defer search.close()
	s := r.cfg.Model.FeatureDim
	step := newAnchorStep(r.prep, cfg.Step)
	rng := r.rng("anchors", t)
	set := anchorSet{classes: sortedClasses(protos), count: k, means: map[int][]float64{}}
	rep := &rundir.AnchorReport{PerClass: k}
	for _, c := range set.classes {
		g := protos[c]
		set.means[c] = slices.Clone(g.Mean)
		starts := anchorStarts(cfg.Start, zOld[:len(p.idx)*s], s, g.Mean, k, rng)
		images := make([]int, k)
		for i, j := range starts {
			images[i] = p.idx[j]
		}
		before, after, zNew, err := search.anchors(r.train, r.prep, images, g.Mean, cfg.Steps, step)
		if err != nil {
			return anchorSet{}, nil, fmt.Errorf("drift anchors of class %d: %w", c, err)
		}
		set.zOld = append(set.zOld, after...)
		set.zNew = append(set.zNew, zNew...)
		rep.Classes = append(rep.Classes, rundir.AnchorClass{Class: c, Before: meanDistance(before, g.Mean), After: meanDistance(after, g.Mean), Spread: math.Sqrt(mat.Trace(g.Cov))})
	}
	for _, cl := range rep.Classes {
		n := float64(len(rep.Classes))
		rep.Before, rep.After, rep.Spread = rep.Before+cl.Before/n, rep.After+cl.After/n, rep.Spread+cl.Spread/n
	}
	rep.Rows, rep.Seconds = set.rows(), since(start)
	r.log.printf("task %d drift anchors: %d per old class, %d steps of %g: mean ||f_old(x) - mu_c|| %.3f -> %.3f (class spread sqrt(tr Sigma_c) %.3f); per class %s",
		t+1, k, cfg.Steps, cfg.Step, rep.Before, rep.After, rep.Spread, anchorClassString(rep.Classes))
	return set, rep, nil
}

// anchorNets are the graphs of the anchor search, for chunks of up to
// batch images: the search itself and forward-only feature extractors of
// the old and the current backbone.
type anchorNets struct {
	batch    int
	search   *anchorSearch
	old, cur *extractor
}

func (r *Run) newAnchorNets(p featurePairs, batch int) (*anchorNets, error) {
	ds := r.train
	n := &anchorNets{batch: batch}
	var err error
	if n.search, err = newAnchorSearch(p.old, batch, ds.Channels, ds.Height, ds.Width); err != nil {
		return nil, err
	}
	if n.old, err = newExtractor(p.old, batch, ds.Channels, ds.Height, ds.Width); err != nil {
		n.close()
		return nil, err
	}
	if n.cur, err = newExtractor(p.cur, batch, ds.Channels, ds.Height, ds.Width); err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

// anchors searches anchors from the given images of ds toward mean, chunk
// by chunk, and returns their old features before and after the search
// and their current features, [len(images),S] each.
func (n *anchorNets) anchors(ds *data.Dataset, prep imaging.Preprocess, images []int, mean []float64, steps int, step anchorStep) (before, after, cur []float32, err error) {
	s, size := len(mean), ds.ImageSize()
	before, after, cur = make([]float32, len(images)*s), make([]float32, len(images)*s), make([]float32, len(images)*s)
	x := make([]float32, n.batch*size)
	for off := 0; off < len(images); off += n.batch {
		m := min(n.batch, len(images)-off)
		for i := range m {
			prep.Normalize(ds.Image(images[off+i]), x[i*size:(i+1)*size])
		}
		rows := func(z []float32) []float32 { return z[off*s : (off+m)*s] }
		err = n.old.run(x, m, rows(before))
		if err == nil {
			err = n.search.run(x, m, mean, steps, step)
		}
		if err == nil {
			err = n.old.run(x, m, rows(after))
		}
		if err == nil {
			err = n.cur.run(x, m, rows(cur))
		}
		if err != nil {
			return nil, nil, nil, err
		}
	}
	return before, after, cur, nil
}

func (n *anchorNets) close() {
	for _, e := range []*extractor{n.old, n.cur} {
		if e != nil {
			e.close()
		}
	}
	if n.search != nil {
		n.search.close()
	}
}

func anchorClassString(classes []rundir.AnchorClass) string {
	parts := make([]string, len(classes))
	for i, c := range classes {
		parts[i] = fmt.Sprintf("%d: %.2f->%.2f/%.2f", c.Class, c.Before, c.After, c.Spread)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// anchorStarts returns the k rows of the n = len(z)/s old features z a
// class's anchor search starts from: the nearest to mean (ties by row), or
// k rows drawn at random.
func anchorStarts(start string, z []float32, s int, mean []float64, k int, rng *rand.Rand) []int {
	n := len(z) / s
	if start == config.AnchorStartRandom {
		return rng.Perm(n)[:k]
	}
	dist := make([]float64, n)
	rows := make([]int, n)
	for i := range rows {
		rows[i] = i
		dist[i] = squaredDistance(z[i*s:(i+1)*s], mean)
	}
	slices.SortStableFunc(rows, func(a, b int) int { return cmp.Compare(dist[a], dist[b]) })
	return rows[:k]
}

func squaredDistance(z []float32, mean []float64) float64 {
	var d float64
	for j, v := range z {
		e := float64(v) - mean[j]
		d += e * e
	}
	return d
}

// meanDistance is the mean over the rows of z of ||z_i - mean||.
func meanDistance(z []float32, mean []float64) float64 {
	s := len(mean)
	n := len(z) / s
	var sum float64
	for i := range n {
		sum += math.Sqrt(squaredDistance(z[i*s:(i+1)*s], mean))
	}
	return sum / float64(n)
}

// anchorStep is one signed-gradient step in normalised input units, per
// channel, and the bounds of the valid input range: pixel values 0 and 1
// normalised with the channel's mean and standard deviation.
type anchorStep struct {
	plane, channels int
	delta, lo, hi   []float32
}

func newAnchorStep(p imaging.Preprocess, step float64) anchorStep {
	a := anchorStep{plane: p.Height * p.Width, channels: p.Channels}
	for c := range p.Channels {
		a.delta = append(a.delta, float32(step)/p.Std[c])
		a.lo = append(a.lo, (0-p.Mean[c])/p.Std[c])
		a.hi = append(a.hi, (1-p.Mean[c])/p.Std[c])
	}
	return a
}

// apply moves every value of x against the sign of its gradient by the
// channel's step and clips it to the valid range.
func (a anchorStep) apply(x, grad []float32) {
	for i, g := range grad {
		c := (i / a.plane) % a.channels
		v := x[i]
		switch {
		case g > 0:
			v -= a.delta[c]
		case g < 0:
			v += a.delta[c]
		}
		x[i] = min(max(v, a.lo[c]), a.hi[c])
	}
}

// anchorSearch is a fixed-size evaluation graph of the old backbone
// (BatchNorm with running statistics) with the gradient of
//
//	L = sum_i ||f_{t-1}(x_i) - mu||^2
//
// with respect to the input images x [batch,C,H,W].
type anchorSearch struct {
	batch         int
	input, target *tensor.Dense
	grad          *G.Node
	vm            G.VM
}

func newAnchorSearch(b *models.Backbone, batch, c, h, w int) (*anchorSearch, error) {
	g := G.NewGraph()
	s := b.FeatureDim()
	a := &anchorSearch{
		batch:  batch,
		input:  tensor.New(tensor.WithShape(batch, c, h, w), tensor.Of(tensor.Float32)),
		target: tensor.New(tensor.WithShape(batch, s), tensor.Of(tensor.Float32)),
	}
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(batch, c, h, w), G.WithName("anchor_image"), G.WithValue(a.input))
	mu := G.NewMatrix(g, tensor.Float32, G.WithShape(batch, s), G.WithName("class_mean"), G.WithValue(a.target))
	// ops.Conv2d builds no input gradient for a leaf input: pass x through an op.
	through, err := G.Add(x, G.NewConstant(float32(0)))
	if err != nil {
		return nil, err
	}
	feat, _, err := buildBackbone(b, g, through, false)
	if err != nil {
		return nil, err
	}
	// The mean of the squared distances: a positive multiple of L, with
	// the same signs of the gradient.
	loss, err := ops.MeanSquaredError(feat, mu)
	if err != nil {
		return nil, err
	}
	grads, err := G.Grad(loss, x)
	if err != nil {
		return nil, fmt.Errorf("anchor input gradient: %w", err)
	}
	a.grad = grads[0]
	a.vm = G.NewTapeMachine(g)
	return a, nil
}

// run takes steps signed-gradient steps toward mean on the n <= batch
// normalised images x (NCHW), in place. It does not return the features:
// the backward pass may overwrite the forward values in place, so they
// are read from a forward-only graph (extractor) instead.
func (a *anchorSearch) run(x []float32, n int, mean []float64, steps int, step anchorStep) error {
	in, tgt := a.input.Data().([]float32), a.target.Data().([]float32)
	size, s := len(in)/a.batch, len(tgt)/a.batch
	for i := range a.batch {
		for j := range s {
			tgt[i*s+j] = float32(mean[j])
		}
	}
	for range steps {
		copy(in, x[:n*size])
		clear(in[n*size:])
		if err := a.vm.RunAll(); err != nil {
			return err
		}
		step.apply(x[:n*size], a.grad.Value().Data().([]float32)[:n*size])
		a.vm.Reset()
	}
	return nil
}

func (a *anchorSearch) close() { a.vm.Close() }
