package train

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/models"
	"github.com/bicyc/bicyc/rundir"
)

func rehearsalParams(rh *Rehearsal) []*tensor.Dense {
	if rh == nil {
		return nil
	}
	return rh.Head.Params()
}

// oldGaussians estimates n Gaussians in S = 8 from random features, each
// class shifted by its index.
func oldGaussians(t *testing.T, n int) []gauss.Gaussian {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 8))
	out := make([]gauss.Gaussian, n)
	for c := range out {
		x := make([]float32, 50*8)
		for i := range x {
			x[i] = float32(rng.NormFloat64() + float64(c))
		}
		g, err := gauss.Estimate(x, 50, 8)
		if err != nil {
			t.Fatal(err)
		}
		out[c] = g
	}
	return out
}

// TestRehearsalGradientRouting checks L_pr's routing (Rehearsal): the
// pseudo-features give no gradient to A or the backbone (drawing other
// ones changes only the rehearsal head's gradient); the real features'
// all-class cross-entropy reaches the backbone, and with
// loss.rehearsal.backbone false it does not, leaving every other gradient
// exactly as without rehearsal.
func TestRehearsalGradientRouting(t *testing.T) {
	nets := newRoutingNets(t)
	cfg := config.Default()
	off := nets.gradients(t, cfg)

	cfg.Loss.Rehearsal.Enabled = true
	// 2 old classes + the 3 of the task.
	nets.rehearsal = &Rehearsal{Head: models.NewLinear(8, 5, true, rand.New(rand.NewPCG(11, 12))), Old: oldGaussians(t, 2), PerClass: 4}
	nets.rehearsalSeed = 1
	on := nets.gradients(t, cfg)
	nets.rehearsalSeed = 2
	otherDraws := nets.gradients(t, cfg)
	for _, name := range []string{"adapter", "distiller", "head"} {
		if d := maxAbsDiff(on[name], otherDraws[name]); d != 0 {
			t.Errorf("other pseudo-features changed the %s's gradient by %g: they must reach only the rehearsal head", name, d)
		}
	}
	// The backbone's gradient moves by rounding only: the softmax of the
	// real rows is shifted by a maximum taken over all rows. A real leak
	// would be of the order of the rehearsal term's own effect.
	effect := maxAbsDiff(off["backbone"], on["backbone"])
	if d := maxAbsDiff(on["backbone"], otherDraws["backbone"]); d > 1e-3*effect {
		t.Errorf("other pseudo-features changed the backbone's gradient by %g (rehearsal's effect %g): they must reach only the rehearsal head", d, effect)
	}
	if maxAbs(on["rehearsal head"]) == 0 || maxAbsDiff(on["rehearsal head"], otherDraws["rehearsal head"]) == 0 {
		t.Error("the rehearsal head's gradient is zero or ignores the pseudo-features")
	}
	if effect == 0 {
		t.Error("rehearsal left the backbone's gradient unchanged: the real features' all-class CE is not wired")
	}
	for _, name := range []string{"adapter", "distiller", "head"} {
		if d := maxAbsDiff(off[name], on[name]); d != 0 {
			t.Errorf("rehearsal changed the %s's gradient by %g", name, d)
		}
	}

	cfg.Loss.Rehearsal.Backbone = false
	asym := nets.gradients(t, cfg)
	for _, name := range []string{"backbone", "adapter", "distiller", "head"} {
		if d := maxAbsDiff(off[name], asym[name]); d != 0 {
			t.Errorf("loss.rehearsal.backbone false: the %s's gradient moved by %g", name, d)
		}
	}
	if maxAbs(asym["rehearsal head"]) == 0 {
		t.Error("loss.rehearsal.backbone false: the rehearsal head gets no gradient")
	}
}

// TestRehearsalStepChecks checks that a step takes a rehearsal head only
// over all seen classes, and only when loss.rehearsal is on.
func TestRehearsalStepChecks(t *testing.T) {
	rn := newRoutingNets(t)
	cfg := config.Default()
	cfg.Loss.Rehearsal.Enabled = true
	in := Stage1Input{Batch: 4, Channels: 1, Height: 8, Width: 8}
	nets := Stage1Nets{Backbone: rn.backbone.Clone(), Old: rn.backbone, Head: rn.head, Distiller: rn.d, Adapter: rn.a}
	rng := rand.New(rand.NewPCG(1, 1))
	for i, c := range []struct {
		heads   int // rehearsal head outputs; 0: no rehearsal
		enabled bool
		ok      bool
	}{{5, true, true}, {3, true, false}, {6, true, false}, {0, true, false}, {5, false, false}, {0, false, true}} {
		cfg.Loss.Rehearsal.Enabled = c.enabled
		nets.Rehearsal = nil
		if c.heads > 0 {
			nets.Rehearsal = &Rehearsal{Head: models.NewLinear(8, c.heads, true, rng), Old: oldGaussians(t, 2), PerClass: 3, RNG: rng}
		}
		st, err := NewStage1Step(cfg, nets, in)
		if (err == nil) != c.ok {
			t.Errorf("case %d: head of %d outputs, enabled %t: error %v, want ok %t", i, c.heads, c.enabled, err, c.ok)
		}
		if err == nil {
			images, labels := make([]float32, 4*64), []int{0, 1, 2, 0}
			if _, err := st.Run(images, labels, 0.01); err != nil {
				t.Errorf("case %d: %v", i, err)
			}
			if got := slices.Contains(st.Terms(), "pr"); got != c.enabled {
				t.Errorf("case %d: terms %v, want pr %t", i, st.Terms(), c.enabled)
			}
			st.Close()
		}
	}
	bad := config.Default()
	bad.Method = config.MethodAdaGauss
	bad.Loss.Rehearsal.Enabled = true
	bad.Loss.Rehearsal.Lambda = -1
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "loss.rehearsal.enabled") || !strings.Contains(err.Error(), "loss.rehearsal.lambda") {
		t.Errorf("rehearsal with adagauss and lambda -1: %v", err)
	}
}

// TestRehearsalSwitch trains task 2 of a small Fashion-MNIST run three
// times from the same task 1: rehearsal off, on with weight 0 and on with
// weight 1. Off and weight 0 must agree bit for bit (the switch takes no
// random draw of any other part and adds nothing but its term); weight 1
// reports the term pr over a head of all 4 seen classes and changes the
// model.
func TestRehearsalSwitch(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST")
	}
	base := quickConfig(config.MethodBicyc, 0)
	base.Data.TrainPerClass, base.Data.TestPerClass = 100, 50
	base.Train.EpochsFirst, base.Train.Epochs = 1, 2
	base.Adapter.TransportSamples = 100
	src := trainRun(t, base, t.TempDir(), 1).Dir()
	fork := func(lambda float64, on bool) (rundir.Summary, string) {
		cfg := base
		cfg.Loss.Rehearsal.Enabled, cfg.Loss.Rehearsal.Lambda = on, lambda
		var log strings.Builder
		r, err := Fork(src, cfg, t.TempDir(), Options{Log: &log, StopAfter: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if err := r.Execute(context.Background()); err != nil {
			t.Fatal(err)
		}
		return summary(t, r), log.String()
	}
	off, _ := fork(1, false)
	zero, _ := fork(0, true)
	on, log := fork(1, true)
	for u := range 2 {
		if a, b := off.MatrixTAg.At(1, u), zero.MatrixTAg.At(1, u); a != b {
			t.Errorf("acc[1][%d]: %v off, %v with weight 0", u, a, b)
		}
	}
	if !slices.Equal(off.Reports[1].ValTAg, zero.Reports[1].ValTAg) || off.Reports[1].Losses["ce"] != zero.Reports[1].Losses["ce"] {
		t.Errorf("weight 0 changed task 2: val %v vs %v, ce %v vs %v", off.Reports[1].ValTAg, zero.Reports[1].ValTAg,
			off.Reports[1].Losses["ce"], zero.Reports[1].Losses["ce"])
	}
	if _, ok := off.Reports[1].Losses["pr"]; ok {
		t.Error("rehearsal off reports a pr loss")
	}
	pr, ok := on.Reports[1].Losses["pr"]
	if !ok || !(pr > 0) || !strings.Contains(log, " pr ") || !strings.Contains(log, "rehearsal over 2 old and 2 new classes") {
		t.Errorf("rehearsal on: pr %v (reported %t); log:\n%s", pr, ok, log)
	}
	if on.Reports[1].Losses["ce"] == off.Reports[1].Losses["ce"] {
		t.Error("rehearsal with weight 1 left task 2's training unchanged")
	}
}
