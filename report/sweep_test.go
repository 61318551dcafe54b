package report

import (
	"math"
	"testing"
)

// TestRunTotalsAdoptedRuns: a run the sweep adopted without a measured wall
// time counts its time in stages in the wall total, and is counted.
func TestRunTotalsAdoptedRuns(t *testing.T) {
	dir := t.TempDir()
	fakeSweep(t, dir)
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	stages, wall, unmeasured := runTotals(set.Runs)
	if unmeasured != 0 {
		t.Fatalf("%d unmeasured runs in a sweep that measured all", unmeasured)
	}
	set.Runs[0].WallSeconds = 0
	stages2, wall2, unmeasured2 := runTotals(set.Runs)
	own := set.Runs[0].StageSeconds()
	if unmeasured2 != 1 || stages2 != stages || math.Abs(wall2-(wall-60+own)) > 1e-9 {
		t.Errorf("one adopted run: unmeasured %d, stages %v (was %v), wall %v, want %v", unmeasured2, stages2, stages, wall2, wall-60+own)
	}
}
