package train

import (
	"slices"
	"testing"

	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/rundir"
)

// TestMeanMap checks the ensemble's output against the mean written out.
func TestMeanMap(t *testing.T) {
	scale := func(k float32) gauss.FeatureMap {
		return func(z []float32, n int) ([]float32, error) {
			out := make([]float32, len(z))
			for i, v := range z {
				out[i] = k*v + float32(i)
			}
			return out, nil
		}
	}
	f := meanMap([]gauss.FeatureMap{scale(1), scale(2), scale(6)}, 2)
	got, err := f([]float32{1, -2, 0.5, 4}, 2)
	if err != nil {
		t.Fatal(err)
	}
	// The mean of k*v + i over k = 1, 2, 6 is 3*v + i.
	want := []float32{3, -6 + 1, 1.5 + 2, 12 + 3}
	if !slices.Equal(got, want) {
		t.Errorf("mean of three maps: %v, want %v", got, want)
	}
}

// TestAdapterEnsembleInStage2 runs Stage II of the anchor fixture's task
// (real Fashion-MNIST features) with adapter.ensemble 1 and 3. The switch
// adds one scored candidate and changes nothing else: A's training loss,
// the other candidates' held-out MSEs and the adapter the run keeps are
// the same, and so are the prototypes unless the ensemble wins. Without
// adapter.select the ensemble carries the old classes, and its prototypes
// differ from A's.
func TestAdapterEnsembleInStage2(t *testing.T) {
	f := newAnchorFixture(t)
	base := f.r.cfg
	stage2 := func(ensemble int, selects bool) (rundir.TaskReport, map[int]gauss.Gaussian, []float32) {
		t.Helper()
		cfg := base
		cfg.Adapter.Ensemble, cfg.Adapter.Select = ensemble, selects
		rep, protos, kept := f.stage2(t, cfg)
		var w []float32
		for _, p := range kept.Params() {
			w = append(w, p.Data().([]float32)...)
		}
		return rep, protos, w
	}
	sameProtos := func(a, b map[int]gauss.Gaussian) bool {
		for c, g := range a {
			if !slices.Equal(b[c].Mean, g.Mean) || !slices.Equal(b[c].Cov.RawSymmetric().Data, g.Cov.RawSymmetric().Data) {
				return false
			}
		}
		return true
	}

	offRep, offProtos, offW := stage2(1, true)
	onRep, onProtos, onW := stage2(3, true)
	t.Logf("held-out MSE %v, chosen %s", onRep.Transport.HeldOutMSE, onRep.Transport.Map)
	if _, ok := offRep.Transport.HeldOutMSE[MapEnsemble]; ok {
		t.Error("adapter.ensemble 1 scored an ensemble")
	}
	ens, ok := onRep.Transport.HeldOutMSE[MapEnsemble]
	if !ok || ens == onRep.Transport.HeldOutMSE[MapAdapter] {
		t.Errorf("adapter.ensemble 3: ensemble scored %v (%v), A %v", ens, ok, onRep.Transport.HeldOutMSE[MapAdapter])
	}
	for _, m := range []string{MapAdapter, MapIdentity, MapLinear} {
		if onRep.Transport.HeldOutMSE[m] != offRep.Transport.HeldOutMSE[m] {
			t.Errorf("adapter.ensemble changed the held-out MSE of %s", m)
		}
	}
	if onRep.AdapterLoss != offRep.AdapterLoss || !slices.Equal(onW, offW) {
		t.Error("adapter.ensemble changed A's training or the adapter the run keeps")
	}
	if onRep.Transport.Map != MapEnsemble && (onRep.Transport.Map != offRep.Transport.Map || !sameProtos(offProtos, onProtos)) {
		t.Errorf("the ensemble lost the choice (%s) yet the transport changed", onRep.Transport.Map)
	}

	_, aProtos, _ := stage2(1, false)
	unscored, eProtos, _ := stage2(3, false)
	if unscored.Transport.Map != MapEnsemble || sameProtos(aProtos, eProtos) {
		t.Errorf("without adapter.select: map %s, prototypes equal to A's transport: %v", unscored.Transport.Map, sameProtos(aProtos, eProtos))
	}
}
