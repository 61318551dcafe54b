package metrics

import (
	"fmt"
	"math"
)

// ALast returns A_last after the last recorded step, NaN if none is (see
// ALastAt).
func ALast(m *Matrix) float64 {
	if m.Steps() == 0 {
		return math.NaN()
	}
	return ALastAt(m, m.Steps()-1)
}

// ALastAt returns the class-count-weighted mean accuracy over the tasks seen
// after step t (paper eq. metrics, A_last evaluated at step t):
//
//	A_last(t) = sum_{u<=t} |C_u| acc[t][u] / sum_{u<=t} |C_u|
//
// It panics if step t is not recorded.
func ALastAt(m *Matrix, t int) float64 {
	checkStep(m, t)
	var num, den float64
	for u, a := range m.rows[t] {
		num += float64(m.counts[u]) * a
		den += float64(m.counts[u])
	}
	return num / den
}

// AInc returns A_inc after the last recorded step, NaN if none is (see
// AIncAt).
func AInc(m *Matrix) float64 {
	if m.Steps() == 0 {
		return math.NaN()
	}
	return AIncAt(m, m.Steps()-1)
}

// AIncAt returns the average incremental accuracy up to step t, the plain
// mean of the steps' A_last (paper eq. metrics):
//
//	A_inc(t) = (1/(t+1)) sum_{j<=t} A_last(j)
//
// It panics if step t is not recorded.
func AIncAt(m *Matrix, t int) float64 {
	checkStep(m, t)
	var sum float64
	for j := 0; j <= t; j++ {
		sum += ALastAt(m, j)
	}
	return sum / float64(t+1)
}

// ForgettingWeights chooses the denominator of F_last. The authors' code and
// the paper disagree; the zero value follows the code (docs/method.md,
// "Metrics"), as bicyc does wherever the two differ.
type ForgettingWeights int

const (
	// OldTasks weights by the classes of the old tasks only (the authors'
	// code; docs/method.md, "Metrics"):
	//
	//	F(t) = sum_{u<t} |C_u| f_u(t) / sum_{u<t} |C_u|
	OldTasks ForgettingWeights = iota
	// AllTasks divides by the classes of all tasks seen, the current one
	// included, whose forgetting is 0 (paper eq. metrics, sums over i = 1..K):
	//
	//	F(t) = sum_{u<t} |C_u| f_u(t) / sum_{u<=t} |C_u|
	AllTasks
)

// String returns "old-tasks" or "all-tasks".
func (w ForgettingWeights) String() string {
	switch w {
	case OldTasks:
		return "old-tasks"
	case AllTasks:
		return "all-tasks"
	}
	return fmt.Sprintf("ForgettingWeights(%d)", int(w))
}

// Forgetting returns the forgetting of task u at step t, the drop from the
// best accuracy task u ever had up to step t (paper eq. metrics, f_i^(K)):
//
//	f_u(t) = [ max_{u<=j<=t} acc[j][u] - acc[t][u] ]_+
//
// The maximum includes j = t, so the result is never negative. It panics
// unless 0 <= u <= t and step t is recorded.
func Forgetting(m *Matrix, t, u int) float64 {
	checkStep(m, t)
	if u < 0 || u > t {
		panic(fmt.Sprintf("metrics: forgetting of task %d at step %d", u, t))
	}
	best := m.rows[t][u]
	for j := u; j < t; j++ {
		best = max(best, m.rows[j][u])
	}
	return max(best-m.rows[t][u], 0)
}

// FLast returns F_last after the last recorded step, NaN if none is (see
// FLastAt).
func FLast(m *Matrix, w ForgettingWeights) float64 {
	if m.Steps() == 0 {
		return math.NaN()
	}
	return FLastAt(m, m.Steps()-1, w)
}

// FLastAt returns the class-count-weighted mean forgetting of the old tasks
// u < t after step t, with the denominator chosen by w (see OldTasks and
// AllTasks). At step 0 there is no old task and the result is 0. It panics
// if step t is not recorded or w is unknown.
func FLastAt(m *Matrix, t int, w ForgettingWeights) float64 {
	checkStep(m, t)
	var num, den float64
	for u := range t {
		num += float64(m.counts[u]) * Forgetting(m, t, u)
		den += float64(m.counts[u])
	}
	return forgettingMean(m, t, w, num, den)
}

// forgettingMean is F_last after step t from the count-weighted sum of the
// old tasks' forgetting (num) and of their counts (den): w decides whether
// step t's own classes weigh in the denominator. It is 0 at step 0 and
// panics if w is unknown.
func forgettingMean(m *Matrix, t int, w ForgettingWeights, num, den float64) float64 {
	switch w {
	case OldTasks:
	case AllTasks:
		den += float64(m.counts[t])
	default:
		panic(fmt.Sprintf("metrics: unknown %v", w))
	}
	if t == 0 {
		return 0
	}
	return num / den
}

// StepSummary holds the metrics after one step, a point of the curves.
type StepSummary struct {
	Step  int     `json:"step"`
	ALast float64 `json:"a_last"`
	AInc  float64 `json:"a_inc"`
	FLast float64 `json:"f_last"`
}

// Curve returns the summary after every recorded step, in step order, with
// forgetting weighted by w: ALastAt, AIncAt and FLastAt of every step, to the
// bit, in one pass over the matrix. (Calling those per step costs time
// cubic in the steps: a run of thousands of classes in tasks of ten has
// hundreds of steps.) It panics if w is unknown.
func Curve(m *Matrix, w ForgettingWeights) []StepSummary {
	out := make([]StepSummary, m.Steps())
	best := make([]float64, len(m.counts)) // max_{u<=j<=t} acc[j][u], so far
	var sumALast float64
	for t := range out {
		row := m.rows[t]
		best[t] = row[t]
		var num, den float64
		for u := range t {
			best[u] = max(best[u], row[u])
			num += float64(m.counts[u]) * max(best[u]-row[u], 0)
			den += float64(m.counts[u])
		}
		aLast := ALastAt(m, t)
		sumALast += aLast
		out[t] = StepSummary{Step: t, ALast: aLast, AInc: sumALast / float64(t+1), FLast: forgettingMean(m, t, w, num, den)}
	}
	return out
}

// MeanStd returns the mean and the population standard deviation of values,
// the aggregation of per-class drift statistics over a class set (paper
// eq. agg):
//
//	mean = (1/|C|) sum_c m_c,   std = sqrt((1/|C|) sum_c (m_c - mean)^2)
//
// Both are NaN for an empty slice.
func MeanStd(values []float64) (mean, std float64) {
	if len(values) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, v := range values {
		mean += v
	}
	mean /= float64(len(values))
	for _, v := range values {
		std += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(std / float64(len(values)))
}

func checkStep(m *Matrix, t int) {
	if t < 0 || t >= len(m.rows) {
		panic(fmt.Sprintf("metrics: step %d outside the %d recorded steps", t, len(m.rows)))
	}
}
