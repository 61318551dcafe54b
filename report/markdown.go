package report

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/rundir"
	"github.com/bicyc/bicyc/sweep"
)

// summaryFile is summary.json: the numbers of report.md for programs.
type summaryFile struct {
	Generated time.Time     `json:"generated"`
	Machine   Machine       `json:"machine"`
	Sweep     *sweep.Record `json:"sweep,omitempty"`
	Groups    []Group       `json:"groups"`
	Runs      []runLine     `json:"runs"`
	Pending   []string      `json:"pending,omitempty"`
	Failed    []FailedRun   `json:"failed,omitempty"`
	Figures   []Figure      `json:"figures"`
}

// runLine is one run in summary.json.
type runLine struct {
	Name         string        `json:"name"`
	Variant      sweep.Variant `json:"variant"`
	Seed         int64         `json:"seed"`
	Completed    int           `json:"completed_tasks"`
	Tasks        int           `json:"tasks"`
	TAgALast     float64       `json:"tag_a_last"`
	TAwALast     float64       `json:"taw_a_last"`
	StageSeconds float64       `json:"stage_seconds"`
	WallSeconds  float64       `json:"wall_seconds,omitempty"`
	// FirstTaskFrom names the run that trained task 1 for a forked run.
	FirstTaskFrom string `json:"task1_from,omitempty"`
	// RescoredFrom names the run whose tasks a classifier variant
	// evaluated again instead of training them (Run.RescoredFrom).
	RescoredFrom string `json:"rescored_from,omitempty"`
}

func newSummaryFile(set *Set, groups []Group, figs figureSet, opts Options) summaryFile {
	s := summaryFile{Generated: opts.Now.UTC(), Machine: *opts.Machine, Sweep: set.Sweep, Groups: groups,
		Pending: set.Pending, Failed: set.Failed, Figures: figs.all()}
	for _, r := range set.Runs {
		s.Runs = append(s.Runs, runLine{Name: r.Name, Variant: r.Variant(), Seed: r.Summary.Seed,
			Completed: r.Summary.Completed, Tasks: r.Summary.Tasks, TAgALast: r.Summary.TAg.ALast,
			TAwALast: r.Summary.TAw.ALast, StageSeconds: r.StageSeconds(), WallSeconds: r.WallSeconds,
			FirstTaskFrom: r.FirstTaskFrom(), RescoredFrom: r.RescoredFrom()})
	}
	return s
}

// markdown renders report.md.
func markdown(set *Set, groups []Group, figs figureSet, opts Options) string {
	var b strings.Builder
	mdHeader(&b, set, groups, opts)
	main, ablation := splitGroups(groups)
	mdResults(&b, groups, main, ablation, set.forgettingLimit())
	mdFigures(&b, main, ablation, figs)
	mdRuns(&b, set)
	p := printer(&b)
	p("## Accuracy matrices (TAg)\n\n")
	p("Accuracy (%%) on each task's test set (column) after training each task (row), one matrix per run.\n\n")
	for _, f := range figs.matrices {
		embed(&b, f)
	}
	return b.String()
}

// printer returns a Printf into b.
func printer(b *strings.Builder) func(format string, args ...any) {
	return func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
}

// mdHeader writes the title, the machine, the setting, the sweep, warnings
// about the runs and how to read the numbers.
func mdHeader(b *strings.Builder, set *Set, groups []Group, opts Options) {
	p := printer(b)
	m := opts.Machine

	p("# BiCyc report: %s\n\n", filepath.Base(filepath.Clean(set.Dir)))
	p("Generated %s on %s. %s\n\n", opts.Now.UTC().Format(dateLayout), m, trainedWith(set))
	first := set.Runs[0].Config
	p("%s\n\n", describeConfig(first))
	if sw := set.Sweep; sw != nil {
		p("Sweep: config `%s`, %s, methods %s, ablation %s", sw.Spec.Config, plural(sw.Spec.Seeds, "seed"), strings.Join(methodNames(sw.Spec.Methods), ", "), onOff(sw.Spec.Ablation))
		if len(sw.Spec.Sets) > 0 {
			p(", sets `%s`", strings.Join(sw.Spec.Sets, "`, `"))
		}
		p(".\n\n")
	}
	for _, g := range groups {
		if dup := duplicateSeeds(g); len(dup) > 0 {
			p("**Warning:** %s has more than one run with seed %s; each counts in its mean and std.\n\n", g.Variant, strings.Join(dup, ", "))
		}
	}
	if diff := runDifferences(set); len(diff) > 0 {
		p("**Warning:** the runs differ in more than method, seed and the ablated losses; their numbers may not compare: %s.\n\n", strings.Join(diff, "; "))
	}
	p("Accuracies are in %%: A_last after the last task, A_inc the mean of A_last over the steps, F_last the class-count-weighted forgetting of the old tasks (docs/method.md, \"Metrics\"); mean ± sample std over seeds. TAg classifies among all classes seen, TAw within the task's own classes.\n\n")
}

// trainedWith says which BLAS kernels trained the set's tasks (rundir.TaskReport.Kernels): kernel sets
// round differently, and runs from before they were recorded say nothing.
func trainedWith(set *Set) string {
	var seen []string
	missing := 0
	for _, r := range set.Runs {
		for _, t := range r.Summary.Reports {
			switch {
			case t.Kernels == "":
				missing++
			case !slices.Contains(seen, t.Kernels):
				seen = append(seen, t.Kernels)
			}
		}
	}
	switch {
	case len(seen) == 0:
		return "Training kernels: not recorded (runs from before bicyc recorded them)."
	case missing > 0:
		return fmt.Sprintf("Training kernels: %s; %d tasks from before bicyc recorded them.", strings.Join(seen, "; "), missing)
	}
	return "Training kernels: " + strings.Join(seen, "; ") + "."
}

// mdResults writes the results tables (main variants and ablation grid).
func mdResults(b *strings.Builder, groups []Group, main, ablation []*Group, limit string) {
	p := printer(b)
	if len(groups) == 0 {
		p("No run has finished yet: the tables and curves need finished runs.\n\n")
	}
	if len(main) > 0 {
		p("## Results\n\n")
		resultsTable(b, main, limit)
		p("Task-aware (TAw) metrics in full:\n\n")
		p("| method | seeds | TAw A_last | TAw A_inc | TAw F_last |\n")
		p("|---|---|---|---|---|\n")
		for _, g := range main {
			p("| %s | %d | %s | %s | %s |\n", g.Variant, len(g.Seeds), pm(g.TAw.ALast), pm(g.TAw.AInc), pm(g.TAw.FLast))
		}
		p("\n")
	}
	if len(ablation) > 1 {
		p("## Ablation: L_bi and L_cyc\n\n")
		p("bicyc with the bidirectional alignment L_bi = L_n2o + L_o2n and the cycle loss L_cyc switched on (✓) or off (✗), everything else equal (paper Table \"Contributions of L_bi and L_cyc\").\n\n")
		ablationTable(b, ablation)
	}
}

// mdFigures writes the per-step curves, the gain matrices and the drift
// diagnostics.
func mdFigures(b *strings.Builder, main, ablation []*Group, figs figureSet) {
	p := printer(b)
	if len(figs.curves) > 0 {
		p("## A_last after every task\n\n")
		all := append(append([]*Group(nil), main...), ablatedOnly(ablation)...)
		p("| method |")
		for t := range all[0].Tasks {
			p(" T%d |", t+1)
		}
		p("\n|---|%s\n", strings.Repeat("---|", all[0].Tasks))
		for _, g := range all {
			p("| %s (TAg) |", g.Variant)
			for _, st := range g.TAg.Steps {
				p(" %s |", pm(st))
			}
			p("\n")
		}
		p("\n")
		for _, f := range figs.curves {
			embed(b, f)
		}
	}
	if len(figs.gains) > 0 {
		p("## Per-step gain of bicyc (paper Figure 3)\n\n")
		p("Each cell is the mean TAg accuracy of bicyc minus that of the other method on task u (column) after training task t (row), in percentage points; red where bicyc is ahead. Gains in the lower-left corner are retained old knowledge.\n\n")
		for _, f := range figs.gains {
			embed(b, f)
		}
	}
	p("## Drift diagnostics\n\n")
	if figs.drift != nil {
		p("After every task, the stored Gaussians of the first task's classes are compared with the statistics of those classes' test features under the current backbone (mean over the classes): distance of the means (mu-L2), Frobenius distance of the covariances (Sigma-Frobenius) and symmetric KL divergence. AD-%% is the share of singular values of A_hat D_hat, least-squares maps between the previous and the current backbone's features of the new task's test images, inside [0.9, 1.1]: 100 %% means the transport is an isometry (paper appendix A.3). Bands are ± std over seeds.\n\n")
		embed(b, *figs.drift)
	} else {
		p("Not recorded: the runs had eval.drift off.\n\n")
	}
}

// mdRuns writes the table of runs, their times and the runs left out.
func mdRuns(b *strings.Builder, set *Set) {
	p := printer(b)
	p("## Runs\n\n")
	p("| run | method | seed | tasks done | TAg A_last | TAw A_last | time in stages | wall time |\n")
	p("|---|---|---|---|---|---|---|---|\n")
	forked, rescored := false, false
	for _, r := range set.Runs {
		w := "–"
		if r.WallSeconds > 0 {
			w = duration(r.WallSeconds)
		}
		name := r.Name
		if from := r.RescoredFrom(); from != "" {
			name += " (evaluated again from " + from + ")"
			rescored = true
		} else if from := r.FirstTaskFrom(); from != "" {
			name += " (task 1 from " + from + ")"
			forked = true
		}
		p("| %s | %s | %d | %d/%d | %s | %s | %s | %s |\n", name, r.Variant(), r.Summary.Seed, r.Summary.Completed, r.Summary.Tasks,
			percent(r.Summary.TAg.ALast), percent(r.Summary.TAw.ALast), duration(r.StageSeconds()), w)
	}
	p("\nTime in stages adds up Stage I, Stage II, transport and evaluation (metrics.json); wall time is what the sweep measured around each run, data loading, drift diagnostics, checkpoints and export included.")
	if forked {
		p(" Runs marked \"task 1 from\" started from that run's task-1 checkpoint (train.Fork): their wall time leaves task 1 out, while their time in stages includes task 1's stage times, copied from the run that trained it; the total below counts such a task once when that run is listed here.")
	}
	if rescored {
		p(" Runs marked \"evaluated again from\" differ from that run only in the classifier: they took its checkpoints and evaluated every task again (train.Rescore), so their wall time is those evaluations, while their time in stages includes the training times copied from the run that trained each task; the total below counts every task's training once when that run is listed here.")
	}
	stages, wall, unmeasured := runTotals(set.Runs)
	p(" Total: %s in stages", duration(stages))
	if unmeasured < len(set.Runs) {
		p(", %s wall", duration(wall))
		if unmeasured > 0 {
			p(" (%d of the runs without a measured wall time count their time in stages)", unmeasured)
		}
	}
	p(".\n\n")
	var unfinished []string
	for _, r := range set.Runs {
		if !r.Finished() {
			unfinished = append(unfinished, r.Name)
		}
	}
	if len(unfinished) > 0 {
		p("Not finished, left out of the tables: %s.\n\n", strings.Join(unfinished, ", "))
	}
	if len(set.Pending) > 0 {
		p("Not started or without a completed task: %s.\n\n", strings.Join(set.Pending, ", "))
	}
	if len(set.Failed) > 0 {
		p("Failed or interrupted (`bicyc sweep --status` lists them; run the cell again to resume):\n\n")
		for _, f := range set.Failed {
			p("- %s: %s", f.Name, f.Status)
			if f.Error != "" {
				p(": %s", strings.ReplaceAll(f.Error, "\n", " "))
			}
			if f.Log != "" {
				p(" (log: %s)", f.Log)
			}
			p("\n")
		}
		p("\n")
	}
}

// methodNames returns the methods as strings, in order.
func methodNames(ms []config.Method) []string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = string(m)
	}
	return names
}

// dateLayout is how reports write their date.
const dateLayout = "2006-01-02 15:04 MST"

// resultsTable writes the paper-form results table of the main variants:
// A_last, A_inc and F_last of TAg and A_last of TAw, mean ± std over seeds
// in %. report.md and the README snippet (Publish) share it.
//
// When runs have a validation split, a first column gives the validation
// A_last and a line after the table names the variant selected on it under
// the forgetting limit limit (SelectOnValidation).
func resultsTable(b *strings.Builder, main []*Group, limit string) {
	choice := SelectOnValidation(main, limit)
	if choice.Selected == nil {
		b.WriteString("| method | seeds | TAg A_last | TAg A_inc | TAg F_last | TAw A_last |\n")
		b.WriteString("|---|---|---|---|---|---|\n")
	} else {
		b.WriteString("| method | seeds | val A_last | val F_last | TAg A_last | TAg A_inc | TAg F_last | TAw A_last |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|\n")
	}
	for _, g := range main {
		fmt.Fprintf(b, "| %s | %d |", g.Variant, len(g.Seeds))
		if choice.Selected != nil {
			val, forget := "–", "–"
			if g.Val != nil {
				val, forget = pm(g.Val.ALast), pm(g.Val.FLast)
			}
			fmt.Fprintf(b, " %s | %s |", val, forget)
		}
		fmt.Fprintf(b, " %s | %s | %s | %s |\n", pm(g.TAg.ALast), pm(g.TAg.AInc), pm(g.TAg.FLast), pm(g.TAw.ALast))
	}
	b.WriteString("\n")
	if choice.Selected != nil && validated(main) > 1 {
		selectionLine(b, choice, limit)
	}
}

// selectionLine names the variant selected on validation and, under a
// forgetting limit, the limit and the best variant it excluded.
func selectionLine(b *strings.Builder, c Choice, limit string) {
	const split = "TAg over every seen class on the held-out training images of data.val_per_class, never trained on"
	sel := c.Selected
	switch {
	case c.Limit != nil:
		fmt.Fprintf(b, "Selected on validation: **%s** (highest mean val A_last, %s, among the variants whose mean val F_last is not above %s's %s; %s).",
			sel.Variant, pm(sel.Val.ALast), c.Limit.Variant, oneDecimal(100*c.Limit.Val.FLast.Mean), split)
		if c.Best != sel {
			fmt.Fprintf(b, " Without that limit it would be %s (val A_last %s, val F_last %s).", c.Best.Variant, pm(c.Best.Val.ALast), pm(c.Best.Val.FLast))
		}
	case limit != "":
		fmt.Fprintf(b, "Selected on validation: **%s** (highest mean val A_last, %s; %s). The forgetting limit %s has no validation metrics among these runs and was not applied.", sel.Variant, pm(sel.Val.ALast), split, limit)
	default:
		fmt.Fprintf(b, "Selected on validation: **%s** (highest mean val A_last, %s; %s).", sel.Variant, pm(sel.Val.ALast), split)
	}
	b.WriteString(" The test columns played no part in the choice.")
	if c.Limit != nil && sel != c.Limit {
		pairedLine(b, sel, c.Limit)
	}
	b.WriteString("\n\n")
}

// pairedLine states, for the record, how the selected variant differs from
// the forgetting limit's seed by seed (PairedDifference): a mean gap
// within a standard error or two of 0 is a tie, whichever side it falls on.
func pairedLine(b *strings.Builder, sel, ref *Group) {
	valF := func(s *rundir.Summary) (float64, bool) { v, ok := s.Validation(); return v.FLast, ok }
	testF := func(s *rundir.Summary) (float64, bool) { return s.TAg.FLast, true }
	testA := func(s *rundir.Summary) (float64, bool) { return s.TAg.ALast, true }
	d := PairedDifference(sel, ref, testF)
	if d.N < 2 {
		return
	}
	fmt.Fprintf(b, " Seed by seed against %s (%d seeds, each pair sharing task 1; mean difference ± standard error, in points): val F_last %s, test F_last %s, test A_last %s.",
		ref.Variant, d.N, signedPoints(PairedDifference(sel, ref, valF)), signedPoints(d), signedPoints(PairedDifference(sel, ref, testA)))
}

// signedPoints formats a Stat of fractions as "+m.mm ± e.ee" percentage
// points, e the standard error: two decimals, since paired gaps are small.
func signedPoints(s Stat) string {
	return fmt.Sprintf("%+.2f ± %.2f", 100*s.Mean, 100*s.StdErr())
}

// validated counts the groups with validation metrics.
func validated(groups []*Group) int {
	n := 0
	for _, g := range groups {
		if g.Val != nil {
			n++
		}
	}
	return n
}

// ablationTable writes the L_bi x L_cyc grid of the bicyc groups in the
// paper's row order (both off first, both on last). report.md and the
// README snippet (Publish) share it.
func ablationTable(b *strings.Builder, ablation []*Group) {
	b.WriteString("| L_bi | L_cyc | seeds | TAg A_last | TAg A_inc | TAg F_last | TAw A_last | TAw A_inc |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, v := range []sweep.Variant{{Method: config.MethodBicyc, Bi: false, Cyc: false}, {Method: config.MethodBicyc, Bi: true, Cyc: false}, {Method: config.MethodBicyc, Bi: false, Cyc: true}, {Method: config.MethodBicyc, Bi: true, Cyc: true}} {
		for _, g := range ablation {
			if g.Variant == v {
				fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", mark(v.Bi), mark(v.Cyc), len(g.Seeds),
					pm(g.TAg.ALast), pm(g.TAg.AInc), pm(g.TAg.FLast), pm(g.TAw.ALast), pm(g.TAw.AInc))
			}
		}
	}
	b.WriteString("\n")
}

// runTotals adds up the runs' time in stages and wall time. A task a run
// took from another (its report's trained_in: a forked run's task 1, see
// Run.FirstTaskFrom, or every task of a rescored one, Run.RescoredFrom)
// counts only when the run that trained it is not among runs, so every task
// trained counts once; wall times need no such care, since they leave such
// tasks out. A run
// with no wall time (trained outside the sweep and adopted by it) adds its
// time in stages to wall instead; unmeasured counts such runs.
func runTotals(runs []*Run) (stages, wall float64, unmeasured int) {
	listed := map[string]bool{}
	for _, r := range runs {
		listed[r.Name] = true
	}
	for _, r := range runs {
		own := r.StageSeconds()
		for _, t := range r.Summary.Reports {
			if t.TrainedIn != "" && listed[runName(t.TrainedIn)] {
				own -= stageSeconds(t)
			}
		}
		stages += own
		if r.WallSeconds > 0 {
			wall += r.WallSeconds
		} else {
			wall += own
			unmeasured++
		}
	}
	return stages, wall, unmeasured
}

// duplicateSeeds lists the seeds that occur more than once in a group.
func duplicateSeeds(g Group) []string {
	var out []string
	for i, s := range g.Seeds {
		if i > 0 && g.Seeds[i-1] == s && (len(out) == 0 || out[len(out)-1] != fmt.Sprint(s)) {
			out = append(out, fmt.Sprint(s))
		}
	}
	return out
}

func ablatedOnly(gs []*Group) []*Group {
	var out []*Group
	for _, g := range gs {
		if g.Variant.Ablated() {
			out = append(out, g)
		}
	}
	return out
}

// embed writes a figure as a Markdown image with its caption.
func embed(b *strings.Builder, f Figure) {
	caption := f.Title
	if f.Caption != "" {
		caption += ". " + f.Caption
	}
	fmt.Fprintf(b, "![%s](%s)\n\n*%s (%d×%d px)*\n\n", f.Title, f.File, caption, f.Width, f.Height)
}

// pm formats a Stat of fractions as "mean ± std" in percent, one decimal,
// or just the mean for a single seed.
func pm(s Stat) string {
	if s.N < 2 {
		return oneDecimal(100 * s.Mean)
	}
	return oneDecimal(100*s.Mean) + " ± " + oneDecimal(100*s.Std)
}

func mark(on bool) string {
	if on {
		return "✓"
	}
	return "✗"
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// duration formats seconds as 45s, 12m05s or 3h07m.
func duration(s float64) string {
	d := time.Duration(s * float64(time.Second)).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// describeConfig states the setting the runs share, from one run's config.
func describeConfig(c config.Config) string {
	quick := ""
	if c.Quick {
		quick = " Quick profile."
	}
	return fmt.Sprintf("Setting: %s, %d tasks, %s backbone (S = %d, %s mapper); Stage I epochs: %d on task 1, %d on later tasks; batch %d; Stage II epochs: %d; %d transport samples per class; images per class: %s for training, %s for testing.%s",
		c.Data.Kind, c.Stream.Tasks, c.Model.Backbone, c.Model.FeatureDim, c.Model.Mapper, c.Train.EpochsFirst, c.Train.Epochs,
		c.Train.BatchSize, c.AdapterEpochs(), c.Adapter.TransportSamples, perClass(c.Data.TrainPerClass), perClass(c.Data.TestPerClass), quick)
}

// perClass is an images-per-class limit as reports state it: 0 is "all".
func perClass(n int) string {
	if n == 0 {
		return "all"
	}
	return fmt.Sprint(n)
}

// budgetText is the training budget of a run configured by c, read from
// the run's own config.yaml, as a figure's caption states it.
func budgetText(c config.Config) string {
	val := ""
	switch {
	case c.Data.ValPerClass < 0:
		val = " (10 % held out for validation)"
	case c.Data.ValPerClass > 0:
		val = fmt.Sprintf(" (%d held out for validation)", c.Data.ValPerClass)
	}
	quick := ""
	if c.Quick {
		quick = ", quick profile"
	}
	return fmt.Sprintf("Budget: %s, %d tasks%s; Stage I %s on task 1, %d on later tasks, batch %d; Stage II %s; images per class: %s for training%s, %s for testing.",
		c.Data.Kind, c.Stream.Tasks, quick, plural(c.Train.EpochsFirst, "epoch"), c.Train.Epochs, c.Train.BatchSize, plural(c.AdapterEpochs(), "epoch"),
		perClass(c.Data.TrainPerClass), val, perClass(c.Data.TestPerClass))
}

// seedsCaption says which seeds the groups' means and stds are over.
func seedsCaption(gs []*Group) string {
	sets := map[string]bool{}
	var counts []int
	for _, g := range gs {
		sets[seedList(g.Seeds)] = true
		counts = append(counts, len(g.Seeds))
	}
	if len(gs) == 0 {
		return "No finished runs."
	}
	if len(sets) == 1 && len(gs[0].Seeds) == 1 {
		return fmt.Sprintf("One run per variant, seed %d.", gs[0].Seeds[0])
	}
	if len(sets) == 1 {
		return fmt.Sprintf("Mean ± std over seeds %s (%s per variant).", seedList(gs[0].Seeds), plural(len(gs[0].Seeds), "run"))
	}
	return fmt.Sprintf("Mean ± std over %d to %d seeds per variant (the variants' seeds differ).", slices.Min(counts), slices.Max(counts))
}

// seedList writes sorted seeds compactly: 0-5, or 0, 2, 7.
func seedList(seeds []int64) string {
	var parts []string
	for i := 0; i < len(seeds); {
		j := i
		for j+1 < len(seeds) && seeds[j+1] == seeds[j]+1 {
			j++
		}
		switch {
		case j-i >= 2:
			parts = append(parts, fmt.Sprintf("%d-%d", seeds[i], seeds[j]))
		case j > i:
			parts = append(parts, fmt.Sprintf("%d, %d", seeds[i], seeds[j]))
		default:
			parts = append(parts, fmt.Sprint(seeds[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// runDifferences lists the configuration keys on which the runs disagree,
// apart from the ones a comparison varies on purpose (method, seed,
// loss.bi, loss.cyc) and the ones that do not change results (names,
// threads, export).
func runDifferences(set *Set) []string {
	runs := set.Runs
	norm := func(c config.Config) config.Config {
		c.Method, c.Seed, c.RunName = "", 0, ""
		c.Loss.Bi, c.Loss.Cyc = true, true
		c.Export = config.Export{}
		// The quick profile is already applied to the keys it sets.
		c.QuickSet = config.Quick{}
		return c
	}
	seen := map[string]bool{}
	var out []string
	base := norm(runs[0].Config)
	for _, r := range runs[1:] {
		own := variantKeys(set.Sweep, r)
		for _, d := range config.ExperimentDiff(base, norm(r.Config)) {
			key, _, _ := strings.Cut(d, ":")
			if !seen[key] && !slices.Contains(own, key) {
				seen[key] = true
				out = append(out, fmt.Sprintf("%s (%s vs %s)", d, runs[0].Name, r.Name))
			}
		}
	}
	return out
}

// variantKeys lists the keys a run's named variant sets in the sweep rec:
// they differ from the other runs by design.
func variantKeys(rec *sweep.Record, r *Run) []string {
	if rec == nil || r.VariantName == "" {
		return nil
	}
	var keys []string
	for _, v := range rec.Spec.Variants {
		if v.Name == r.VariantName && v.Method == r.Config.Method {
			for _, kv := range v.Sets {
				key, _, _ := strings.Cut(kv, "=")
				keys = append(keys, key)
			}
		}
	}
	return keys
}
