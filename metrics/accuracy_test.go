package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
)

func mustMatrix(t *testing.T, counts []int, rows ...[]float64) *Matrix {
	t.Helper()
	m, err := NewMatrix(counts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := m.AddStep(r); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// The hand-computed matrices. Fractions are given exactly; the tests allow
// 1e-12 for the rounding of the decimal inputs.
//
// bigFirst: counts [50, 10, 10], a first task five times larger.
//
//	step 0: [0.80]
//	step 1: [0.70, 0.90]
//	step 2: [0.60, 0.85, 0.95]
//
//	A_last(0) = 0.8
//	A_last(1) = (50*0.70 + 10*0.90) / 60 = 44/60 = 11/15
//	A_last(2) = (50*0.60 + 10*0.85 + 10*0.95) / 70 = 48/70 = 24/35
//	A_inc(1)  = (4/5 + 11/15) / 2 = 23/30
//	A_inc(2)  = (4/5 + 11/15 + 24/35) / 3 = (84 + 77 + 72)/105/3 = 233/315
//	f_0(1) = 0.80 - 0.70 = 0.10
//	F(1)   old tasks: 50*0.10/50 = 0.1;  all tasks: 5/60 = 1/12
//	f_0(2) = max(0.80, 0.70, 0.60) - 0.60 = 0.20
//	f_1(2) = max(0.90, 0.85) - 0.85 = 0.05
//	F(2)   old tasks: (50*0.20 + 10*0.05)/60 = 10.5/60 = 0.175
//	       all tasks: 10.5/70 = 0.15
//
// lateMax: counts [30, 10, 10]; task 0's best accuracy comes after it was
// learnt, and task 1 improves, so its forgetting clamps at 0.
//
//	step 0: [0.7]
//	step 1: [0.9, 0.8]
//	step 2: [0.6, 0.8, 0.9]
//
//	A_last(2) = (30*0.6 + 10*0.8 + 10*0.9)/50 = 35/50 = 0.7
//	A_inc(2)  = (0.7 + (27 + 8)/40 + 0.7)/3 = (0.7 + 0.875 + 0.7)/3 = 2.275/3
//	f_0(2) = 0.9 - 0.6 = 0.3,  f_1(2) = 0.8 - 0.8 = 0
//	F(2)   old tasks: 30*0.3/40 = 0.225;  all tasks: 9/50 = 0.18
//
// improving: counts [20, 10], every accuracy rises, so nothing is forgotten.
//
//	step 0: [0.5];  step 1: [0.6, 0.7]
//	A_last(1) = (12 + 7)/30 = 19/30;  A_inc(1) = (0.5 + 19/30)/2 = 17/30
//	f_0(1) = [max(0.5, 0.6) - 0.6]_+ = 0
func handMatrices(t *testing.T) (bigFirst, lateMax, improving *Matrix) {
	bigFirst = mustMatrix(t, []int{50, 10, 10}, []float64{0.80}, []float64{0.70, 0.90}, []float64{0.60, 0.85, 0.95})
	lateMax = mustMatrix(t, []int{30, 10, 10}, []float64{0.7}, []float64{0.9, 0.8}, []float64{0.6, 0.8, 0.9})
	improving = mustMatrix(t, []int{20, 10}, []float64{0.5}, []float64{0.6, 0.7})
	return
}

func TestHandComputedMetrics(t *testing.T) {
	bigFirst, lateMax, improving := handMatrices(t)
	cases := []struct {
		m                       *Matrix
		step                    int
		aLast, aInc, fOld, fAll float64
	}{
		{bigFirst, 0, 0.8, 0.8, 0, 0},
		{bigFirst, 1, 11.0 / 15, 23.0 / 30, 0.1, 1.0 / 12},
		{bigFirst, 2, 24.0 / 35, 233.0 / 315, 0.175, 0.15},
		{lateMax, 2, 0.7, 2.275 / 3, 0.225, 0.18},
		{improving, 1, 19.0 / 30, 17.0 / 30, 0, 0},
	}
	for i, c := range cases {
		got := []float64{ALastAt(c.m, c.step), AIncAt(c.m, c.step), FLastAt(c.m, c.step, OldTasks), FLastAt(c.m, c.step, AllTasks)}
		want := []float64{c.aLast, c.aInc, c.fOld, c.fAll}
		names := []string{"A_last", "A_inc", "F (old tasks)", "F (all tasks)"}
		for k := range got {
			if math.Abs(got[k]-want[k]) > 1e-12 {
				t.Errorf("case %d (step %d): %s = %.15g, want %.15g", i, c.step, names[k], got[k], want[k])
			}
		}
	}
	// The whole-run functions read the last step.
	if got, want := ALast(bigFirst), 24.0/35; math.Abs(got-want) > 1e-12 {
		t.Errorf("ALast = %v, want %v", got, want)
	}
	if got, want := AInc(bigFirst), 233.0/315; math.Abs(got-want) > 1e-12 {
		t.Errorf("AInc = %v, want %v", got, want)
	}
	if got := FLast(bigFirst, OldTasks); math.Abs(got-0.175) > 1e-12 {
		t.Errorf("FLast(OldTasks) = %v, want 0.175", got)
	}
	if got := FLast(bigFirst, AllTasks); math.Abs(got-0.15) > 1e-12 {
		t.Errorf("FLast(AllTasks) = %v, want 0.15", got)
	}
}

func TestForgettingPerTask(t *testing.T) {
	_, lateMax, _ := handMatrices(t)
	cases := []struct {
		step, task int
		want       float64
	}{
		{1, 0, 0},   // 0.9 after 0.7: an improvement
		{2, 0, 0.3}, // best 0.9 at step 1, now 0.6
		{2, 1, 0},   // 0.8 both times
		{2, 2, 0},   // the current task
	}
	for i, c := range cases {
		if got := Forgetting(lateMax, c.step, c.task); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("case %d: f_%d(%d) = %v, want %v", i, c.task, c.step, got, c.want)
		}
	}
}

func TestCurve(t *testing.T) {
	bigFirst, _, _ := handMatrices(t)
	got := Curve(bigFirst, OldTasks)
	want := []StepSummary{
		{0, 0.8, 0.8, 0},
		{1, 11.0 / 15, 23.0 / 30, 0.1},
		{2, 24.0 / 35, 233.0 / 315, 0.175},
	}
	if len(got) != len(want) {
		t.Fatalf("Curve has %d points, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Step != w.Step || math.Abs(g.ALast-w.ALast) > 1e-12 || math.Abs(g.AInc-w.AInc) > 1e-12 || math.Abs(g.FLast-w.FLast) > 1e-12 {
			t.Errorf("case %d: %+v, want %+v", i, g, w)
		}
	}
}

// TestCurveMatchesSteps: Curve's one pass gives, to the bit, what ALastAt,
// AIncAt and FLastAt give step by step, on a 200-step matrix of random
// accuracies and task sizes, stopped before its last 20 tasks, with both
// forgetting weights.
func TestCurveMatchesSteps(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	counts := make([]int, 220)
	for i := range counts {
		counts[i] = 1 + rng.IntN(20)
	}
	var rows [][]float64
	for step := range 200 {
		row := make([]float64, step+1)
		for u := range row {
			row[u] = float64(rng.IntN(1001)) / 1000
		}
		rows = append(rows, row)
	}
	m := mustMatrix(t, counts, rows...)
	for _, w := range []ForgettingWeights{OldTasks, AllTasks} {
		for step, got := range Curve(m, w) {
			want := StepSummary{Step: step, ALast: ALastAt(m, step), AInc: AIncAt(m, step), FLast: FLastAt(m, step, w)}
			if got != want {
				t.Fatalf("%s, step %d: Curve %+v, per step %+v", w, step, got, want)
			}
		}
	}
}

// TestPartialRun: a 4-task run stopped after 2 steps reports the metrics of
// step 1 (bigFirst's numbers with a fourth task that never came).
func TestPartialRun(t *testing.T) {
	m := mustMatrix(t, []int{50, 10, 10, 10}, []float64{0.80}, []float64{0.70, 0.90})
	if got := ALast(m); math.Abs(got-11.0/15) > 1e-12 {
		t.Errorf("ALast = %v, want 11/15", got)
	}
	if got := m.At(3, 0); !math.IsNaN(got) {
		t.Errorf("At(3, 0) = %v, want NaN for an unrecorded step", got)
	}
	if got := m.At(0, 1); !math.IsNaN(got) {
		t.Errorf("At(0, 1) = %v, want NaN above the diagonal", got)
	}
	empty := mustMatrix(t, []int{10})
	for i, v := range []float64{ALast(empty), AInc(empty), FLast(empty, OldTasks)} {
		if !math.IsNaN(v) {
			t.Errorf("case %d: metric of an empty matrix = %v, want NaN", i, v)
		}
	}
}

func TestMeanStd(t *testing.T) {
	// Values 1, 2, 3, 6: mean 3; squared deviations 4, 1, 0, 9 sum to 14;
	// population std sqrt(14/4) = sqrt(3.5).
	mean, std := MeanStd([]float64{1, 2, 3, 6})
	if mean != 3 || math.Abs(std-math.Sqrt(3.5)) > 1e-15 {
		t.Errorf("MeanStd = %v, %v, want 3, sqrt 3.5", mean, std)
	}
	if m, s := MeanStd(nil); !math.IsNaN(m) || !math.IsNaN(s) {
		t.Errorf("MeanStd(nil) = %v, %v, want NaN, NaN", m, s)
	}
}

func TestForgettingWeightsString(t *testing.T) {
	for i, c := range []struct {
		w    ForgettingWeights
		want string
	}{{OldTasks, "old-tasks"}, {AllTasks, "all-tasks"}, {ForgettingWeights(5), "ForgettingWeights(5)"}} {
		if got := c.w.String(); got != c.want {
			t.Errorf("case %d: %q, want %q", i, got, c.want)
		}
	}
}
