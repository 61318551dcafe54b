package report

import (
	"strings"
	"testing"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/sweep"
)

// TestSelectOnValidation: the report chooses the variant with the best
// validation A_last even when another has the better test A_last, and says
// so next to the table.
func TestSelectOnValidation(t *testing.T) {
	out := t.TempDir()
	rehearsal := sweep.Variant{Method: config.MethodBicyc, Name: "rehearsal", Bi: true, Cyc: true}
	var runs []*Run
	for seed := range int64(2) {
		for _, c := range []struct {
			v              sweep.Variant
			testOff, valAt float64
		}{{full, 0.05, 0.60}, {rehearsal, 0, 0.70}, {finetune, -0.1, 0.50}} {
			f := threeTasks(c.v, seed, c.testOff, false)
			f.val = [][]float64{{0.9}, {0.8, 0.8}, {c.valAt, c.valAt, c.valAt}}
			r, err := LoadRun(f.write(t, out))
			if err != nil {
				t.Fatal(err)
			}
			r.VariantName = c.v.Name
			runs = append(runs, r)
		}
	}
	groups, err := Aggregate(runs)
	if err != nil {
		t.Fatal(err)
	}
	var main []*Group
	for i := range groups {
		main = append(main, &groups[i])
	}
	if _, ablation := splitGroups(groups); len(ablation) != 1 || ablation[0].Variant != full {
		t.Errorf("ablation grid %v, want plain bicyc alone: a named variant is no ablation cell", ablation)
	}
	if f := fullBicyc(main); f == nil || f.Variant != full {
		t.Errorf("full bicyc is %v, want the plain bicyc group", f)
	}
	choice := SelectOnValidation(main, "")
	sel := choice.Selected
	if sel == nil || sel.Variant != rehearsal || choice.Best != sel || choice.Limit != nil {
		t.Fatalf("selected %v, want %v (val A_last 0.70 against 0.60 and 0.50)", sel, rehearsal)
	}
	if got := sel.Val.ALast; got.N != 2 || got.Mean < 0.699 || got.Mean > 0.701 {
		t.Errorf("val A_last %+v, want 0.70 over 2 seeds", got)
	}
	if groups[0].TAg.ALast.Mean <= sel.TAg.ALast.Mean {
		t.Fatalf("test setup: bicyc's test A_last %.3f should beat the selected variant's %.3f", groups[0].TAg.ALast.Mean, sel.TAg.ALast.Mean)
	}
	var b strings.Builder
	resultsTable(&b, main, "")
	md := b.String()
	for _, want := range []string{"| val A_last |", "| bicyc+rehearsal | 2 | 70.0 ± 0.0 |", "Selected on validation: **bicyc+rehearsal**"} {
		if !strings.Contains(md, want) {
			t.Errorf("results table lacks %q:\n%s", want, md)
		}
	}

	// Runs without a validation split keep the table without the column.
	plain := threeTasks(full, 0, 0, false)
	r, err := LoadRun(plain.write(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	groups, _ = Aggregate([]*Run{r})
	b.Reset()
	resultsTable(&b, []*Group{&groups[0]}, "")
	if strings.Contains(b.String(), "val A_last") || strings.Contains(b.String(), "Selected") || groups[0].Val != nil {
		t.Errorf("runs without validation got a val column or selection:\n%s", b.String())
	}
}

// TestSelectUnderForgettingLimit: with a forgetting limit, a variant whose
// validation F_last is above the limit's is not selected even with the best
// validation A_last, and the table line says which variant it would have been.
func TestSelectUnderForgettingLimit(t *testing.T) {
	out := t.TempDir()
	greedy := sweep.Variant{Method: config.MethodBicyc, Name: "greedy", Bi: true, Cyc: true}
	steady := sweep.Variant{Method: config.MethodBicyc, Name: "steady", Bi: true, Cyc: true}
	// val A_last 0.60, 0.683, 0.66; val F_last 0.25, 0.34, 0.19.
	val := map[sweep.Variant][][]float64{
		full:   {{0.9}, {0.8, 0.8}, {0.6, 0.6, 0.6}},
		greedy: {{0.99}, {0.99, 0.99}, {0.65, 0.65, 0.75}},
		steady: {{0.9}, {0.8, 0.8}, {0.66, 0.66, 0.66}},
	}
	var runs []*Run
	for seed := range int64(2) {
		for _, v := range []sweep.Variant{full, greedy, steady} {
			f := threeTasks(v, seed, 0, false)
			f.val = val[v]
			r, err := LoadRun(f.write(t, out))
			if err != nil {
				t.Fatal(err)
			}
			r.VariantName = v.Name
			runs = append(runs, r)
		}
	}
	groups, err := Aggregate(runs)
	if err != nil {
		t.Fatal(err)
	}
	main := []*Group{&groups[0], &groups[1], &groups[2]}
	if c := SelectOnValidation(main, ""); c.Selected == nil || c.Selected.Variant != greedy {
		t.Fatalf("without a limit selected %+v, want %v (best val A_last)", c.Selected, greedy)
	}
	c := SelectOnValidation(main, "bicyc")
	if c.Selected == nil || c.Selected.Variant != steady || c.Best.Variant != greedy || c.Limit == nil || c.Limit.Variant != full {
		t.Fatalf("under the limit: selected %v, best %v, limit %v; want %v, %v, %v", c.Selected, c.Best, c.Limit, steady, greedy, full)
	}
	var b strings.Builder
	resultsTable(&b, main, "bicyc")
	for _, want := range []string{"| val F_last |", "Selected on validation: **bicyc+steady**", "not above bicyc's 25.0", "Without that limit it would be bicyc+greedy",
		// val F_last 0.19 against 0.25 on both seeds.
		"Seed by seed against bicyc (2 seeds", "val F_last -6.00 ± 0.00"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("results table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	resultsTable(&b, main, "adagauss")
	if !strings.Contains(b.String(), "**bicyc+greedy**") || !strings.Contains(b.String(), "was not applied") {
		t.Errorf("a limit not among the runs should select without it and say so:\n%s", b.String())
	}
}

// TestVariantKeysAreNoDifference: a named variant's own sets are not
// reported as a difference between runs; other keys still are.
func TestVariantKeysAreNoDifference(t *testing.T) {
	plain, named := &Run{Name: "bicyc-s0", Config: config.Default()}, &Run{Name: "bicyc-cal-s0", Config: config.Default(), VariantName: "cal"}
	named.Config.Classifier.Shrink, named.Config.Classifier.AgeBias = 0.5, 0.01
	rec := &sweep.Record{Spec: sweep.Spec{Variants: []sweep.NamedVariant{{Name: "cal", Method: config.MethodBicyc, Sets: []string{"classifier.shrink=0.5", "classifier.age_bias=0.01"}}}}}
	if diff := runDifferences(&Set{Sweep: rec, Runs: []*Run{plain, named}}); len(diff) != 0 {
		t.Errorf("the variant's own keys reported as differences: %v", diff)
	}
	named.Config.Train.Epochs++
	if diff := runDifferences(&Set{Sweep: rec, Runs: []*Run{plain, named}}); len(diff) != 1 || !strings.Contains(diff[0], "train.epochs") {
		t.Errorf("differences %v, want train.epochs alone", diff)
	}
}
