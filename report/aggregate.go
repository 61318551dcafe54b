package report

import (
	"fmt"
	"math"
	"slices"

	"github.com/bicyc/bicyc/rundir"
	"github.com/bicyc/bicyc/sweep"
)

// Stat is the mean and spread of one number over the seeds of a variant.
type Stat struct {
	Mean float64 `json:"mean"`
	// Std is the sample standard deviation (n-1 in the denominator, the
	// usual "mean +- std over runs" of the paper's tables); 0 when N < 2.
	Std float64 `json:"std"`
	N   int     `json:"n"`
}

// NewStat returns the mean and sample standard deviation of values:
//
//	mean = (1/n) sum_i v_i,   std = sqrt( sum_i (v_i - mean)^2 / (n-1) )
//
// with std = 0 for n < 2, and a zero Stat for no values.
func NewStat(values []float64) Stat {
	n := len(values)
	if n == 0 {
		return Stat{}
	}
	var mean float64
	for _, v := range values {
		mean += v
	}
	mean /= float64(n)
	var ss float64
	for _, v := range values {
		ss += (v - mean) * (v - mean)
	}
	st := Stat{Mean: mean, N: n}
	if n > 1 {
		st.Std = math.Sqrt(ss / float64(n-1))
	}
	return st
}

// MetricStats aggregates one classifier's metrics (TAg or TAw) over seeds;
// values are fractions in [0, 1] like rundir.MetricSet's.
type MetricStats struct {
	ALast Stat `json:"a_last"`
	AInc  Stat `json:"a_inc"`
	FLast Stat `json:"f_last"`
	// Steps is A_last after every step t = 0..T-1.
	Steps []Stat `json:"a_last_per_step"`
}

// DriftStats aggregates the drift diagnostics (rundir.Drift) after every
// step over seeds. ADPercent[0] has N = 0: AD-% needs an old backbone.
type DriftStats struct {
	MeanL2       []Stat `json:"mu_l2"`
	CovFrobenius []Stat `json:"sigma_frobenius"`
	SymmetricKL  []Stat `json:"sym_kl"`
	ADPercent    []Stat `json:"ad_percent"`
}

// Group is a variant aggregated over the seeds of its finished runs.
type Group struct {
	Variant sweep.Variant `json:"variant"`
	// Runs are the finished runs of the variant, in seed order.
	Runs  []*Run  `json:"-"`
	Seeds []int64 `json:"seeds"`
	// Tasks and ClassCounts describe the stream every run shares.
	Tasks       int         `json:"tasks"`
	ClassCounts []int       `json:"class_counts"`
	TAg         MetricStats `json:"tag"`
	TAw         MetricStats `json:"taw"`
	// Val is TAg on the validation split (rundir.Summary.Validation), nil
	// unless every run has one: the numbers to choose between variants by.
	Val *MetricStats `json:"val_tag,omitempty"`
	// MeanTAg is the TAg accuracy matrix averaged over seeds, row t holding
	// t+1 entries.
	MeanTAg [][]float64 `json:"mean_acc_tag"`
	// Drift is nil unless every run recorded drift diagnostics.
	Drift *DriftStats `json:"drift,omitempty"`
}

// Aggregate groups the finished runs by variant, in the order of their
// first appearance in runs, and computes each group's statistics; runs
// that stopped early are left out, since metrics after different numbers
// of tasks do not average. Runs of one variant must share the task stream
// shape (number of tasks and classes per task), or Aggregate returns an
// error naming the runs.
func Aggregate(runs []*Run) ([]Group, error) {
	var groups []Group
	index := map[sweep.Variant]int{}
	for _, r := range runs {
		if !r.Finished() {
			continue
		}
		v := r.Variant()
		i, ok := index[v]
		if !ok {
			i = len(groups)
			index[v] = i
			groups = append(groups, Group{Variant: v, Tasks: r.Summary.Tasks, ClassCounts: r.Summary.MatrixTAg.ClassCounts()})
		}
		g := &groups[i]
		if !slices.Equal(g.ClassCounts, r.Summary.MatrixTAg.ClassCounts()) {
			return nil, fmt.Errorf("report: %s: runs %s and %s have different task streams (classes per task %v and %v)",
				v, g.Runs[0].Name, r.Name, g.ClassCounts, r.Summary.MatrixTAg.ClassCounts())
		}
		g.Runs = append(g.Runs, r)
	}
	for i := range groups {
		g := &groups[i]
		slices.SortStableFunc(g.Runs, func(a, b *Run) int {
			return cmpInt64(a.Summary.Seed, b.Summary.Seed)
		})
		for _, r := range g.Runs {
			g.Seeds = append(g.Seeds, r.Summary.Seed)
		}
		g.TAg = metricStats(g.Runs, func(s *rundir.Summary) rundir.MetricSet { return s.TAg })
		g.TAw = metricStats(g.Runs, func(s *rundir.Summary) rundir.MetricSet { return s.TAw })
		g.Val = validationStats(g.Runs)
		g.MeanTAg = meanMatrix(g.Runs, g.Tasks)
		g.Drift = driftStats(g.Runs, g.Tasks)
	}
	return groups, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func metricStats(runs []*Run, pick func(*rundir.Summary) rundir.MetricSet) MetricStats {
	var last, inc, forget []float64
	for _, r := range runs {
		m := pick(&r.Summary)
		last, inc, forget = append(last, m.ALast), append(inc, m.AInc), append(forget, m.FLast)
	}
	ms := MetricStats{ALast: NewStat(last), AInc: NewStat(inc), FLast: NewStat(forget)}
	steps := len(pick(&runs[0].Summary).Steps)
	for t := range steps {
		vals := make([]float64, len(runs))
		for i, r := range runs {
			vals[i] = pick(&r.Summary).Steps[t]
		}
		ms.Steps = append(ms.Steps, NewStat(vals))
	}
	return ms
}

// validationStats aggregates the runs' validation metrics, nil when a run
// has none.
func validationStats(runs []*Run) *MetricStats {
	for _, r := range runs {
		if _, ok := r.Summary.Validation(); !ok {
			return nil
		}
	}
	ms := metricStats(runs, func(s *rundir.Summary) rundir.MetricSet {
		v, _ := s.Validation()
		return v
	})
	return &ms
}

// Choice is the variant selected on the validation split and what
// bounded the choice.
type Choice struct {
	// Selected has the highest mean validation A_last among the eligible
	// groups; nil when no group has validation metrics.
	Selected *Group
	// Limit is the group named by the forgetting limit, nil without one (or
	// when it is not among the groups or has no validation metrics): only
	// groups whose mean validation F_last is not above Limit's are eligible.
	Limit *Group
	// Best has the highest mean validation A_last of all groups, eligible
	// or not: Selected unless the limit excluded it.
	Best *Group
}

// SelectOnValidation chooses among groups by their mean validation A_last.
// limit names a group as the report shows it (sweep.Selection.ForgettingLimit;
// "" for none): groups whose mean validation F_last is above that group's
// are not eligible. Ties go to the earlier group. Test metrics play no part:
// this is the honest choice of a variant.
func SelectOnValidation(groups []*Group, limit string) Choice {
	var c Choice
	for _, g := range groups {
		if g.Val != nil && limit != "" && g.Variant.String() == limit {
			c.Limit = g
		}
	}
	for _, g := range groups {
		if g.Val == nil {
			continue
		}
		if c.Best == nil || g.Val.ALast.Mean > c.Best.Val.ALast.Mean {
			c.Best = g
		}
		eligible := c.Limit == nil || g.Val.FLast.Mean <= c.Limit.Val.FLast.Mean
		if eligible && (c.Selected == nil || g.Val.ALast.Mean > c.Selected.Val.ALast.Mean) {
			c.Selected = g
		}
	}
	return c
}

func meanMatrix(runs []*Run, tasks int) [][]float64 {
	out := make([][]float64, tasks)
	for t := range out {
		out[t] = make([]float64, t+1)
		for u := range out[t] {
			for _, r := range runs {
				out[t][u] += r.Summary.MatrixTAg.At(t, u)
			}
			out[t][u] /= float64(len(runs))
		}
	}
	return out
}

func driftStats(runs []*Run, tasks int) *DriftStats {
	for _, r := range runs {
		if !r.HasDrift() {
			return nil
		}
	}
	d := &DriftStats{}
	for t := range tasks {
		var mu, sigma, kl, ad []float64
		for _, r := range runs {
			x := r.Summary.Reports[t].Drift
			mu, sigma, kl = append(mu, x.MeanL2), append(sigma, x.CovFrobenius), append(kl, x.SymmetricKL)
			if x.ADPercent != nil {
				ad = append(ad, *x.ADPercent)
			}
		}
		d.MeanL2 = append(d.MeanL2, NewStat(mu))
		d.CovFrobenius = append(d.CovFrobenius, NewStat(sigma))
		d.SymmetricKL = append(d.SymmetricKL, NewStat(kl))
		d.ADPercent = append(d.ADPercent, NewStat(ad))
	}
	return d
}

// Gain is the per-step, per-task accuracy gain of one variant over another
// (paper Figure 3): Delta[t][u] = mean acc_of[t][u] - mean acc_over[t][u]
// over seeds, in percentage points, TAg.
type Gain struct {
	Of, Over sweep.Variant
	Delta    [][]float64
}

// GainOf returns the gain of group a over group b, or an error if their
// task streams differ in shape.
func GainOf(a, b *Group) (Gain, error) {
	if !slices.Equal(a.ClassCounts, b.ClassCounts) {
		return Gain{}, fmt.Errorf("report: %s and %s have different task streams (classes per task %v and %v)",
			a.Variant, b.Variant, a.ClassCounts, b.ClassCounts)
	}
	g := Gain{Of: a.Variant, Over: b.Variant, Delta: make([][]float64, a.Tasks)}
	for t := range g.Delta {
		g.Delta[t] = make([]float64, t+1)
		for u := range g.Delta[t] {
			g.Delta[t][u] = 100 * (a.MeanTAg[t][u] - b.MeanTAg[t][u])
		}
	}
	return g, nil
}

// PairedDifference is metric(a) - metric(b) over the seeds both groups
// ran, seed by seed. Runs of one seed share the task stream and task 1, so
// the paired difference leaves out what the seeds share, and its standard
// error (Std/sqrt(N)) says whether a gap between two variants is larger
// than the noise between seeds. metric reports false for a run without the
// number (validation metrics of a run without a split); such seeds are
// left out. A zero Stat means no seed pairs.
func PairedDifference(a, b *Group, metric func(*rundir.Summary) (float64, bool)) Stat {
	var diffs []float64
	for _, ra := range a.Runs {
		for _, rb := range b.Runs {
			if ra.Summary.Seed != rb.Summary.Seed {
				continue
			}
			va, okA := metric(&ra.Summary)
			vb, okB := metric(&rb.Summary)
			if okA && okB {
				diffs = append(diffs, va-vb)
			}
		}
	}
	return NewStat(diffs)
}

// StdErr is the standard error of the mean, Std/sqrt(N); 0 when N < 2.
func (s Stat) StdErr() float64 {
	if s.N < 2 {
		return 0
	}
	return s.Std / math.Sqrt(float64(s.N))
}
