package main

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bicyc/bicyc/gauss"
)

// validationKinds are the unknown kinds the default score is chosen on:
// images of the validation split only (known images, shifted ones of
// them, and the outside pictures and synthetic images of its half), none
// of which the test split holds.
var validationKinds = []string{kindShifted, kindFar}

// testKinds are reported per score.
var testKinds = []string{kindNear, kindShifted, kindFarPhotos, kindFarSynthetic, kindFar}

// chooseScore returns the score with the highest mean validation AUROC
// over validationKinds and seeds, and that mean per score; "" when no seed
// measured kinds. Test numbers are never read.
func chooseScore(results []seedResult) (string, map[string]float64) {
	means := map[string]float64{}
	best := ""
	for _, u := range gauss.UnknownScores() {
		var sum float64
		n := 0
		for _, r := range results {
			if r.Kinds == nil {
				continue
			}
			for _, kind := range validationKinds {
				sum += r.Kinds.Scores[string(u)][splitValidation][kind].AUROC
				n++
			}
		}
		if n == 0 {
			continue
		}
		means[string(u)] = sum / float64(n)
		if best == "" || means[string(u)] > means[best] {
			best = string(u)
		}
	}
	return best, means
}

// writeKinds renders the unknown-kinds section: the choice on validation,
// then every score on the test kinds.
func writeKinds(b *strings.Builder, results []seedResult) {
	chosen, valMeans := chooseScore(results)
	if chosen == "" {
		return
	}
	var measured []seedResult
	for _, r := range results {
		if r.Kinds != nil {
			measured = append(measured, r)
		}
	}
	first := measured[0].Kinds
	b.WriteString("\n## Unknown scores on near, shifted and far unknowns\n\n")
	b.WriteString("Every unknown score (gauss.UnknownScore) of the same models. The known Fashion-MNIST test images of the\n")
	b.WriteString("eight trained classes are split by position: even ones for validation, odd ones for test. Kinds:\n")
	b.WriteString("near = the test images of the two held-out classes (test only); shifted = known images of the split,\n")
	b.WriteString("a third each inverted, turned 90 and turned 180 degrees; far-photos = the photos and graphics of\n")
	b.WriteString("Debian's libjxl-testdata and Go's image/testdata, split by picture (all encodings of one picture in one\n")
	b.WriteString("split); far-synthetic = 100 noise images (uniform and blurred) and 20 blank ones per split; far = both.\n")
	fmt.Fprintf(b, "Images per kind (seed %d): validation %s; test %s.", measured[0].Seed, countText(first.Images[splitValidation]), countText(first.Images[splitTest]))
	if len(first.Skipped) > 0 {
		fmt.Fprintf(b, " Outside files that do not decode, skipped: %s.", strings.Join(first.Skipped, ", "))
	}
	b.WriteString("\n\n")
	fmt.Fprintf(b, "**Choice, on the validation split only**: the score with the highest mean validation AUROC over\n")
	fmt.Fprintf(b, "%s and the seeds is **%s**.\n\n", strings.Join(validationKinds, " and "), chosen)
	b.WriteString("| score | validation AUROC shifted | validation AUROC far | mean (choice) |\n|---|---|---|---|\n")
	for _, u := range gauss.UnknownScores() {
		name := string(u)
		var rows [][]float64
		for _, r := range measured {
			rows = append(rows, []float64{r.Kinds.Scores[name][splitValidation][kindShifted].AUROC, r.Kinds.Scores[name][splitValidation][kindFar].AUROC})
		}
		m := meanStd(rows)
		fmt.Fprintf(b, "| %s | %s | %s | %.3f |\n", mark(name, chosen), m[0], m[1], valMeans[name])
	}
	b.WriteString("\nTest split, read once after the choice: AUROC per kind (unknown positive), FPR at 95 % TPR, the share\n")
	b.WriteString("of known test images the score's calibrated threshold accepts (asked: the model's accept rate; range over\n")
	b.WriteString("seeds) and the share of far test images it answers unknown. Mean ± std over seeds.\n\n")
	b.WriteString("| score | AUROC near | AUROC shifted | AUROC far-photos | AUROC far-synthetic | AUROC far | FPR@95TPR near | FPR@95TPR far | known accepted (asked) | far rejected |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, u := range gauss.UnknownScores() {
		name := string(u)
		var rows [][]float64
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range measured {
			d := r.Kinds.Scores[name][splitTest]
			var row []float64
			for _, kind := range testKinds {
				row = append(row, d[kind].AUROC)
			}
			row = append(row, d[kindNear].FPR95, d[kindFar].FPR95, r.Kinds.Rejected[name][kindFar])
			rows = append(rows, row)
			lo, hi = min(lo, r.Kinds.Accepted[name]), max(hi, r.Kinds.Accepted[name])
		}
		m := meanStd(rows)
		fmt.Fprintf(b, "| %s | %s | %s (%.2f) | %s |\n", mark(name, chosen), strings.Join(m[:7], " | "),
			acceptedRange(lo, hi), measured[0].AcceptRate, m[7])
	}
	b.WriteString("\nPer seed, test AUROC near / far of the chosen score and its known acceptance:\n\n")
	b.WriteString("| seed | unknown classes | AUROC near | AUROC far | known accepted (asked) |\n|---|---|---|---|---|\n")
	for _, r := range measured {
		d := r.Kinds.Scores[chosen][splitTest]
		fmt.Fprintf(b, "| %d | %s | %.3f | %.3f | %.3f (%.2f) |\n", r.Seed, names(r.Unknown), d[kindNear].AUROC, d[kindFar].AUROC, r.Kinds.Accepted[chosen], r.AcceptRate)
	}
}

func mark(name, chosen string) string {
	if name == chosen {
		return "**" + name + "** (chosen)"
	}
	return name
}

func acceptedRange(lo, hi float64) string {
	if lo == hi {
		return fmt.Sprintf("%.3f", lo)
	}
	return fmt.Sprintf("%.3f to %.3f", lo, hi)
}

func countText(m map[string]int) string {
	kinds := slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	})
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
