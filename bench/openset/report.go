package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/bicyc/bicyc/data"
)

// markdown renders a report as the README of the output directory: how it
// was run, then a table per measurement with one row per seed and the mean
// ± sample standard deviation over seeds.
func markdown(rep report) string {
	var b strings.Builder
	cfg := rep.Config
	fmt.Fprintf(&b, "# Unknown detection and classes added without retraining (Fashion-MNIST)\n\n")
	fmt.Fprintf(&b, "Written by `go run ./bench/openset`. Method %s, 4 tasks of 2 classes; the last two classes of a\n", cfg.Method)
	fmt.Fprintf(&b, "seeded class permutation are never trained and serve as the unknowns. The model is calibrated on\n")
	fmt.Fprintf(&b, "the validation split (held-out training images, never trained on). Unknown images are the positives.\n\n")
	writeRunInfo(&b, rep)
	b.WriteString("## Unknown detection\n\n")
	b.WriteString("FPR@95TPR is the share of unknown images accepted when 95 % of known ones are (the threshold taken\n")
	b.WriteString("on the test scores themselves); \"known accepted\" is the share of known test images the calibrated\n")
	b.WriteString("threshold, fitted on held-out training images, accepts (asked rate in parentheses).\n\n")
	b.WriteString("| seed | unknown classes | AUROC calibrated | AUROC nearest distance | FPR@95TPR calibrated | FPR@95TPR nearest distance | known accepted (asked) | unknown rejected | known accuracy |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	detectionRow := func(r seedResult) []float64 {
		return []float64{r.Calibrated.AUROC, r.Baseline.AUROC, r.Calibrated.FPR95, r.Baseline.FPR95, r.AcceptedKnown, r.RejectedUnknown, r.OldAccuracy}
	}
	var rows [][]float64
	for _, r := range rep.Results {
		v := detectionRow(r)
		rows = append(rows, v)
		fmt.Fprintf(&b, "| %d | %s | %.3f | %.3f | %.3f | %.3f | %.3f (%.2f) | %.3f | %.3f |\n", r.Seed, names(r.Unknown),
			v[0], v[1], v[2], v[3], v[4], r.AcceptRate, v[5], v[6])
	}
	m := meanStd(rows)
	fmt.Fprintf(&b, "| mean ± std | | %s | %s | %s | %s | %s | %s | %s |\n", m[0], m[1], m[2], m[3], m[4], m[5], m[6])
	writeKinds(&b, rep.Results)
	writeAdditions(&b, rep.Results)
	return b.String()
}

// writeRunInfo states the command, date, machine and budget of the run.
func writeRunInfo(b *strings.Builder, rep report) {
	run, cfg := rep.Run, rep.Config.Resolved()
	b.WriteString("## Run\n\n")
	fmt.Fprintf(b, "- command (from the repository root): `CGO_LDFLAGS=-lopenblas go run ./bench/openset %s`\n", strings.Join(run.Args, " "))
	fmt.Fprintf(b, "- date: %s to %s UTC, wall time %.1f min for %d seed(s)\n", run.Started.Format("2006-01-02 15:04"),
		run.Finished.Format("2006-01-02 15:04"), run.WallSeconds/60, len(rep.Results))
	fmt.Fprintf(b, "- machine: %s; load average (1, 5, 15 min) %s at start, %s at end\n", run.Machine, run.LoadStart, run.LoadEnd)
	source := "the default configuration"
	if rep.ConfigFile != "" {
		source = "the defaults with " + rep.ConfigFile
	}
	if cfg.Quick {
		source += ", quick profile: a reduced budget, smaller than the default configuration's"
	}
	recorded := "as each seed's run recorded it in its own config.yaml and image folders"
	for _, r := range rep.Results {
		if r.Budget == nil {
			recorded = "as the configuration asks (this results.json predates recorded budgets)"
		}
	}
	fmt.Fprintf(b, "- budget: %s; %s. ", source, recorded)
	budgets := map[string]bool{}
	for _, r := range rep.Results {
		bud := configBudget(cfg)
		if r.Budget != nil {
			bud = *r.Budget
		}
		if text := bud.text(); !budgets[text] {
			budgets[text] = true
			if len(budgets) > 1 {
				fmt.Fprintf(b, "\n  Seed %d differs: ", r.Seed)
			}
			b.WriteString(text)
		}
	}
	b.WriteString("\n\n")
}

// writeAdditions renders the table of classes added by add-classes and learn.
func writeAdditions(b *strings.Builder, results []seedResult) {
	b.WriteString("\n## Adding the two unknown classes\n\n")
	b.WriteString("Accuracy over all ten classes on the test images of the new and of the old classes, after\n")
	b.WriteString("`bicyc-infer add-classes` (no training, all n images) and after `bicyc learn` (one trained task on the\n")
	b.WriteString("same n images, of which its validation split holds out data.val_per_class) on the same images.\n\n")
	b.WriteString("| seed | images per class | add-classes new | add-classes old | learn new | learn old |\n|---|---|---|---|---|---|\n")
	byN := map[int][][]float64{}
	var ns []int
	for _, r := range results {
		for _, a := range r.Added {
			learnNew, learnOld := "-", "-"
			if a.Learn != (accuracy{}) {
				learnNew, learnOld = fmt.Sprintf("%.3f", a.Learn.New), fmt.Sprintf("%.3f", a.Learn.Old)
			}
			fmt.Fprintf(b, "| %d | %d | %.3f | %.3f | %s | %s |\n", r.Seed, a.N, a.Add.New, a.Add.Old, learnNew, learnOld)
			if _, seen := byN[a.N]; !seen {
				ns = append(ns, a.N)
			}
			learnt := []float64{math.NaN(), math.NaN()}
			if a.Learn != (accuracy{}) {
				learnt = []float64{a.Learn.New, a.Learn.Old}
			}
			byN[a.N] = append(byN[a.N], append([]float64{a.Add.New, a.Add.Old}, learnt...))
		}
	}
	for _, n := range ns {
		m := meanStd(byN[n])
		fmt.Fprintf(b, "| mean ± std | %d | %s | %s | %s | %s |\n", n, m[0], m[1], m[2], m[3])
	}
}

// meanStd formats the mean ± sample standard deviation of each column of
// rows ("-" for a column with a NaN: not measured).
func meanStd(rows [][]float64) []string {
	if len(rows) == 0 {
		return nil
	}
	out := make([]string, len(rows[0]))
	for c := range out {
		var sum, sq float64
		for _, r := range rows {
			sum += r[c]
		}
		mean := sum / float64(len(rows))
		for _, r := range rows {
			sq += (r[c] - mean) * (r[c] - mean)
		}
		switch {
		case math.IsNaN(mean):
			out[c] = "-"
		case len(rows) == 1:
			out[c] = fmt.Sprintf("%.3f", mean)
		default:
			out[c] = fmt.Sprintf("%.3f ± %.3f", mean, math.Sqrt(sq/float64(len(rows)-1)))
		}
	}
	return out
}

func names(classes []int) string {
	var out []string
	for _, c := range classes {
		out = append(out, data.FashionMNISTClasses[c])
	}
	return strings.Join(out, ", ")
}
