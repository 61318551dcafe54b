package report

import (
	"errors"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bicyc/bicyc/rundir"
	"github.com/bicyc/bicyc/sweep"
)

func TestNewStat(t *testing.T) {
	cases := []struct {
		values    []float64
		mean, std float64
		n         int
	}{
		{nil, 0, 0, 0},
		{[]float64{0.7}, 0.7, 0, 1},
		{[]float64{0.5, 0.7}, 0.6, math.Sqrt(0.02), 2},
		// Sample std of 2, 4, 4, 4, 5, 5, 7, 9: sum of squares 32 over n-1 = 7.
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, math.Sqrt(32.0 / 7), 8},
	}
	for i, c := range cases {
		s := NewStat(c.values)
		if math.Abs(s.Mean-c.mean) > 1e-12 || math.Abs(s.Std-c.std) > 1e-12 || s.N != c.n {
			t.Errorf("case %d: NewStat(%v) = %+v, want mean %v std %v n %d", i, c.values, s, c.mean, c.std, c.n)
		}
	}
}

// TestAggregateHandMade checks the statistics of a hand-made sweep against
// values worked out by hand from the accuracy rows of threeTasks.
func TestAggregateHandMade(t *testing.T) {
	dir := t.TempDir()
	fakeSweep(t, dir)
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Runs) != 15 || len(set.Pending) != 0 {
		t.Fatalf("loaded %d runs, %d pending; want 15, 0", len(set.Runs), len(set.Pending))
	}
	groups, err := Aggregate(set.Runs)
	if err != nil {
		t.Fatal(err)
	}
	want := []sweep.Variant{full, adagauss, noCyc, noBi, noBoth}
	if len(groups) != len(want) {
		t.Fatalf("%d groups, want %d", len(groups), len(want))
	}
	for i, v := range want {
		if groups[i].Variant != v {
			t.Errorf("group %d is %s, want %s", i, groups[i].Variant, v)
		}
	}
	g := groups[0]
	// bicyc offsets 0.04, 0.05, 0.06: final TAg row (0.4, 0.5, 0.7) + o over
	// equal class counts gives A_last 0.5333 + o; A_inc averages
	// 0.9, 0.7, 0.5333 (+ o); old tasks forget 0.5 and 0.3.
	checks := []struct {
		name      string
		got       Stat
		mean, std float64
	}{
		{"tag a_last", g.TAg.ALast, 1.6/3 + 0.05, 0.01},
		{"tag a_inc", g.TAg.AInc, (0.9+0.7+1.6/3)/3 + 0.05, 0.01},
		{"tag f_last", g.TAg.FLast, 0.4, 0},
		{"tag a_last step 1", g.TAg.Steps[0], 0.95, 0.01},
		{"taw a_last", g.TAw.ALast, 1.6/3 + 0.1, 0.01},
		{"mu_l2 step 3", g.Drift.MeanL2[2], 1.5, 0},
		{"sym_kl step 2", g.Drift.SymmetricKL[1], 40, 0},
		{"ad step 2", g.Drift.ADPercent[1], 51, 1},
	}
	for i, c := range checks {
		if math.Abs(c.got.Mean-c.mean) > 1e-9 || math.Abs(c.got.Std-c.std) > 1e-9 || c.got.N != 3 {
			t.Errorf("case %d (%s): %+v, want mean %v std %v n 3", i, c.name, c.got, c.mean, c.std)
		}
	}
	if g.Drift.ADPercent[0].N != 0 {
		t.Errorf("AD-%% at step 1 has %d values, want none", g.Drift.ADPercent[0].N)
	}
	gain, err := GainOf(&groups[0], &groups[1])
	if err != nil {
		t.Fatal(err)
	}
	for s, row := range gain.Delta {
		for u, d := range row {
			if math.Abs(d-4) > 1e-9 {
				t.Errorf("gain over adagauss at step %d task %d = %v pp, want 4", s+1, u+1, d)
			}
		}
	}
}

func TestAggregateSkipsUnfinishedAndRejectsMixedStreams(t *testing.T) {
	dir := t.TempDir()
	done := threeTasks(full, 0, 0, false)
	stopped := threeTasks(full, 1, 0, false)
	stopped.tag, stopped.taw = stopped.tag[:2], stopped.taw[:2]
	var runs []*Run
	for _, f := range []fakeRun{done, stopped} {
		r, err := LoadRun(f.write(t, dir))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	groups, err := Aggregate(runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 || len(groups[0].Seeds) != 1 || groups[0].Seeds[0] != 0 {
		t.Fatalf("groups %+v: want bicyc with seed 0 only", groups)
	}

	other := fakeRun{variant: full, seed: 2, counts: []int{4, 2}, tag: [][]float64{{0.9}, {0.5, 0.6}}, taw: [][]float64{{0.9}, {0.6, 0.7}}}
	r, err := LoadRun(other.write(t, filepath.Join(dir, "other")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Aggregate(append(runs, r)); err == nil {
		t.Fatal("runs with 2+2+2 and 4+2 classes per task aggregated without an error")
	} else if errors.Is(err, rundir.ErrInvalidRun) {
		t.Fatalf("mixed streams reported as a corrupt run: %v", err)
	}
}

// TestPairedDifference: differences are taken seed by seed over the seeds
// both groups ran, runs without the number are left out, and the standard
// error is Std/sqrt(N).
func TestPairedDifference(t *testing.T) {
	group := func(forget map[int64]float64, noVal ...int64) *Group {
		g := &Group{}
		for _, seed := range []int64{0, 1, 2, 3} {
			f, ok := forget[seed]
			if !ok {
				continue
			}
			r := &Run{Summary: rundir.Summary{Seed: seed, TAg: rundir.MetricSet{FLast: f}}}
			if !slices.Contains(noVal, seed) {
				r.Summary.Completed = 1
			}
			g.Runs = append(g.Runs, r)
		}
		return g
	}
	a := group(map[int64]float64{0: 0.10, 1: 0.20, 2: 0.40, 3: 0.9}, 2)
	b := group(map[int64]float64{0: 0.11, 1: 0.17, 2: 0.30})
	forget := func(s *rundir.Summary) (float64, bool) { return s.TAg.FLast, s.Completed == 1 }
	d := PairedDifference(a, b, forget)
	// Seed 3 has no partner and seed 2 no number in a: pairs 0 and 1 only.
	if d.N != 2 || math.Abs(d.Mean-0.01) > 1e-12 || math.Abs(d.Std-math.Sqrt(0.0008)) > 1e-12 {
		t.Errorf("paired difference %+v, want N 2, mean 0.01, std sqrt(0.0008)", d)
	}
	if se := d.StdErr(); math.Abs(se-0.02) > 1e-12 {
		t.Errorf("standard error %v, want 0.02", se)
	}
	if d := PairedDifference(a, &Group{}, forget); d != (Stat{}) {
		t.Errorf("no common seeds: %+v, want the zero Stat", d)
	}
	if got := signedPoints(Stat{Mean: -0.0004, Std: 0.003, N: 9}); got != "-0.04 ± 0.10" {
		t.Errorf("signedPoints = %q, want -0.04 ± 0.10", got)
	}
}
