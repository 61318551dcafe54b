package train

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/rundir"
)

// anchorFixture is task 2 of a quick two-task Fashion-MNIST run, as Stage
// II sees it: the backbones before and after Stage I, the stored task-1
// prototypes and the task-2 training features.
type anchorFixture struct {
	r      *Run
	p      featurePairs
	zOld   []float32
	protos map[int]gauss.Gaussian
}

func newAnchorFixture(t *testing.T) anchorFixture {
	t.Helper()
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST")
	}
	cfg := quickConfig("bicyc", 0)
	cfg.Data.TrainPerClass, cfg.Data.TestPerClass = 60, 20
	dir := t.TempDir()
	r := trainRun(t, cfg, dir, 2)
	first, err := LoadCheckpoint(checkpointDir(dir, 1), cfg)
	if err != nil {
		t.Fatal(err)
	}
	idx := r.trainIndices(r.stream.Tasks[1])
	zOld, err := features(first.Backbone, r.train, idx, r.prep, cfg.Train.EvalBatch, false)
	if err != nil {
		t.Fatal(err)
	}
	zNew, err := features(r.State().Backbone, r.train, idx, r.prep, cfg.Train.EvalBatch, false)
	if err != nil {
		t.Fatal(err)
	}
	p := featurePairs{old: first.Backbone, cur: r.State().Backbone, idx: idx, zNew: zNew, rows: len(idx)}
	return anchorFixture{r: r, p: p, zOld: zOld, protos: first.Prototypes}
}

// stage2 runs Stage II of the fixture's task under cfg, from an adapter
// initialised the same way every time, on a copy of the stored prototypes.
// It returns the task's report, the prototypes after the transport and the
// adapter the run keeps.
func (f anchorFixture) stage2(t *testing.T, cfg config.Config) (rundir.TaskReport, map[int]gauss.Gaussian, *models.Mapper) {
	t.Helper()
	f.r.cfg = cfg
	m := cfg.Model
	adapt, err := models.NewMapper(m.Mapper, m.FeatureDim, m.HiddenMult, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	protos := maps.Clone(f.protos)
	var rep rundir.TaskReport
	kept, err := f.r.stage2(1, f.p, adapt, protos, &rep)
	if err != nil {
		t.Fatal(err)
	}
	return rep, protos, kept
}

// TestDriftAnchors checks on real Fashion-MNIST features that the anchor
// search moves every old class's anchors toward its stored mean in the old
// feature space, that it reads no image of an old task (inverting every
// task-1 image changes nothing), and that the random start is seeded.
func TestDriftAnchors(t *testing.T) {
	f := newAnchorFixture(t)
	r := f.r
	r.cfg.Anchors.PerClass = 20
	set, rep, err := r.driftAnchors(1, f.p, f.zOld, f.protos)
	if err != nil {
		t.Fatal(err)
	}
	s := r.cfg.Model.FeatureDim
	if rep == nil || rep.Rows != 40 || set.rows() != 40 || len(set.zOld) != 40*s || len(set.zNew) != 40*s {
		t.Fatalf("2 old classes x 20 anchors: report %+v, %d rows", rep, set.rows())
	}
	for _, c := range rep.Classes {
		t.Logf("class %d: mean distance to mu_c %.3f -> %.3f (class spread %.3f)", c.Class, c.Before, c.After, c.Spread)
		if !(c.After < 0.9*c.Before) {
			t.Errorf("class %d: anchors at distance %.3f after the search, %.3f before", c.Class, c.After, c.Before)
		}
	}

	r.cfg.Train.EvalBatch = 7 // the search in chunks of 7 images
	chunked, chunkedRep, err := r.driftAnchors(1, f.p, f.zOld, f.protos)
	r.cfg.Train.EvalBatch = 500
	if err != nil {
		t.Fatal(err)
	}
	if chunked.rows() != 40 || math.Abs(chunkedRep.After-rep.After) > 0.02*rep.After || math.Abs(chunkedRep.Before-rep.Before) > 1e-5 {
		t.Errorf("search in chunks of 7: distance %.4f -> %.4f, in one chunk %.4f -> %.4f", chunkedRep.Before, chunkedRep.After, rep.Before, rep.After)
	}

	old := *r.train
	inverted := old
	inverted.Pixels = slices.Clone(old.Pixels)
	for _, j := range old.Subset(r.stream.Tasks[0]) {
		img := inverted.Image(j)
		for i := range img {
			img[i] = 255 - img[i]
		}
	}
	r.train = &inverted
	again, _, err := r.driftAnchors(1, f.p, f.zOld, f.protos)
	r.train = &old
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.zOld, set.zOld) || !slices.Equal(again.zNew, set.zNew) {
		t.Error("the anchors changed when the images of the old task changed: an old image was read")
	}

	r.cfg.Anchors.Start = config.AnchorStartRandom
	random, _, err := r.driftAnchors(1, f.p, f.zOld, f.protos)
	if err != nil {
		t.Fatal(err)
	}
	randomAgain, _, _ := r.driftAnchors(1, f.p, f.zOld, f.protos)
	if slices.Equal(random.zOld, set.zOld) || !slices.Equal(random.zOld, randomAgain.zOld) {
		t.Error("random starts: the same anchors as the nearest starts, or other anchors on a second call")
	}
}

// TestDriftAnchorsInStage2 runs Stage II of the fixture's task with
// anchors off (other anchors.* keys changed: bit-identical to the
// defaults), on (the held-out MSE of the fitted linear map and of A
// change, the identity's does not) and on with anchors.mean_shift (means
// move, covariances do not).
func TestDriftAnchorsInStage2(t *testing.T) {
	f := newAnchorFixture(t)
	base := f.r.cfg
	stage2 := func(a config.Anchors) (rundir.TaskReport, map[int]gauss.Gaussian) {
		t.Helper()
		cfg := base
		cfg.Anchors = a
		rep, protos, _ := f.stage2(t, cfg)
		return rep, protos
	}
	defaults := config.Default().Anchors
	offRep, offProtos := stage2(defaults)
	inert := config.Anchors{Steps: 7, Step: 0.5, Start: config.AnchorStartRandom, MeanShift: true}
	inertRep, inertProtos := stage2(inert)
	if offRep.Anchors != nil || inertRep.AdapterLoss != offRep.AdapterLoss || !maps.Equal(inertRep.Transport.HeldOutMSE, offRep.Transport.HeldOutMSE) {
		t.Errorf("anchors off: report %+v, want %+v", inertRep, offRep)
	}
	for c, g := range offProtos {
		if !slices.Equal(inertProtos[c].Mean, g.Mean) || !slices.Equal(inertProtos[c].Cov.RawSymmetric().Data, g.Cov.RawSymmetric().Data) {
			t.Errorf("anchors off: class %d's prototype depends on the other anchors.* keys", c)
		}
	}

	on := defaults
	on.PerClass = 20
	onRep, onProtos := stage2(on)
	t.Logf("held-out MSE without anchors %v (%s), with %v (%s)", offRep.Transport.HeldOutMSE, offRep.Transport.Map, onRep.Transport.HeldOutMSE, onRep.Transport.Map)
	mse := func(rep rundir.TaskReport, m string) float64 { return rep.Transport.HeldOutMSE[m] }
	if onRep.Anchors == nil || onRep.Anchors.Rows != 40 {
		t.Fatalf("anchors on: report %+v", onRep.Anchors)
	}
	if mse(onRep, MapIdentity) != mse(offRep, MapIdentity) || mse(onRep, MapLinear) == mse(offRep, MapLinear) || mse(onRep, MapAdapter) == mse(offRep, MapAdapter) {
		t.Error("anchors on: the fitted maps did not change, or the identity's score did")
	}

	on.MeanShift = true
	_, shifted := stage2(on)
	for c, g := range onProtos {
		if slices.Equal(shifted[c].Mean, g.Mean) || !slices.Equal(shifted[c].Cov.RawSymmetric().Data, g.Cov.RawSymmetric().Data) {
			t.Errorf("anchors.mean_shift: class %d's mean kept or covariance changed", c)
		}
	}
}

// TestAnchorStepClips checks one signed step: against the gradient's sign,
// by step/std per channel, zero gradient unmoved, clipped to the range of
// normalised pixels 0..1.
func TestAnchorStepClips(t *testing.T) {
	p := imaging.Preprocess{Channels: 1, Height: 1, Width: 4, Mean: []float32{0.5}, Std: []float32{0.25}}
	step := newAnchorStep(p, 0.1)
	x := []float32{0, 0, 0, 1.9}
	step.apply(x, []float32{1, -1, 0, -1})
	want := []float32{-0.4, 0.4, 0, 2}
	for i := range x {
		if d := x[i] - want[i]; d > 1e-6 || d < -1e-6 {
			t.Errorf("value %d: %g, want %g", i, x[i], want[i])
		}
	}
}
