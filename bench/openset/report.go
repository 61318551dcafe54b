package main

import (
	"fmt"
	"strings"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
)

// markdown renders the results as the README of the output directory.
func markdown(cfg config.Config, configFile string, results []seedResult) string {
	var b strings.Builder
	budget := "the default configuration"
	if configFile != "" {
		budget = "the defaults with " + configFile
	}
	if cfg.Quick {
		budget += ", quick profile (a smoke test, not a result)"
	}
	fmt.Fprintf(&b, "# Unknown detection and classes added without retraining (Fashion-MNIST)\n\n")
	fmt.Fprintf(&b, "Written by `go run ./bench/openset`. Method %s, %s, 4 tasks of 2 classes; the last two classes of a\n", cfg.Method, budget)
	fmt.Fprintf(&b, "seeded class permutation are never trained and serve as the unknowns. The model is calibrated on\n")
	fmt.Fprintf(&b, "the validation split (data.val_per_class %d). Unknown images are the positives.\n\n", cfg.Data.ValPerClass)
	b.WriteString("## Unknown detection\n\n")
	b.WriteString("| seed | unknown classes | AUROC calibrated | AUROC nearest distance | FPR@95TPR calibrated | FPR@95TPR nearest distance | known accepted (asked) | unknown rejected | known accuracy |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %d | %s | %.3f | %.3f | %.3f | %.3f | %.3f (%.2f) | %.3f | %.3f |\n", r.Seed, names(r.Unknown),
			r.Calibrated.AUROC, r.Baseline.AUROC, r.Calibrated.FPR95, r.Baseline.FPR95, r.AcceptedKnown, r.AcceptRate, r.RejectedUnknown, r.OldAccuracy)
	}
	b.WriteString("\n## Adding the two unknown classes\n\n")
	b.WriteString("Accuracy over all ten classes on the test images of the new and of the old classes, after\n")
	b.WriteString("`bicyc-infer add-classes` (no training) and after `bicyc learn` (one trained task) on the same images.\n\n")
	b.WriteString("| seed | images per class | add-classes new | add-classes old | learn new | learn old |\n|---|---|---|---|---|---|\n")
	for _, r := range results {
		for _, a := range r.Added {
			learnNew, learnOld := "-", "-"
			if a.Learn != (accuracy{}) {
				learnNew, learnOld = fmt.Sprintf("%.3f", a.Learn.New), fmt.Sprintf("%.3f", a.Learn.Old)
			}
			fmt.Fprintf(&b, "| %d | %d | %.3f | %.3f | %s | %s |\n", r.Seed, a.N, a.Add.New, a.Add.Old, learnNew, learnOld)
		}
	}
	return b.String()
}

func names(classes []int) string {
	var out []string
	for _, c := range classes {
		out = append(out, data.FashionMNISTClasses[c])
	}
	return strings.Join(out, ", ")
}
