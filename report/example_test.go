package report_test

import (
	"fmt"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/report"
	"github.com/bicyc/bicyc/train"
	"github.com/bicyc/bicyc/train/metrics"
)

func ExampleSpec_Plan() {
	spec := report.Spec{Config: "configs/fmnist-t5-e10.yaml", Out: "runs/sweep", Seeds: 2,
		Methods: []string{"bicyc", "adagauss"}, Ablation: true}
	if err := spec.Validate(); err != nil {
		panic(err)
	}
	for _, p := range spec.Plan() {
		fmt.Printf("%-22s %s\n", p.Name, p.Variant)
	}
	// Output:
	// bicyc-s0               bicyc
	// adagauss-s0            adagauss
	// bicyc-s1               bicyc
	// adagauss-s1            adagauss
	// bicyc-nobi-s0          bicyc w/o L_bi
	// bicyc-nocyc-s0         bicyc w/o L_cyc
	// bicyc-nobi-nocyc-s0    bicyc w/o L_bi, L_cyc
	// bicyc-nobi-s1          bicyc w/o L_bi
	// bicyc-nocyc-s1         bicyc w/o L_cyc
	// bicyc-nobi-nocyc-s1    bicyc w/o L_bi, L_cyc
}

func ExampleNewStat() {
	// A_last of three seeds, as fractions.
	s := report.NewStat([]float64{0.512, 0.498, 0.530})
	fmt.Printf("%.1f ± %.1f %% over %d seeds\n", 100*s.Mean, 100*s.Std, s.N)
	// Output: 51.3 ± 1.6 % over 3 seeds
}

func ExampleAggregate() {
	// Two seeds of a 2-task run, 5 classes per task, as metrics.json holds
	// them (in practice LoadRun or Load reads them from run directories).
	var runs []*report.Run
	for seed, rows := range [][][]float64{
		{{0.90}, {0.60, 0.80}},
		{{0.92}, {0.64, 0.78}},
	} {
		r := &report.Run{Name: fmt.Sprintf("bicyc-s%d", seed), Config: config.Default()}
		r.Config.Seed = int64(seed)
		tag, _ := metrics.NewMatrix([]int{5, 5})
		for _, row := range rows {
			if err := tag.AddStep(row); err != nil {
				panic(err)
			}
		}
		r.Summary = train.Summary{Method: "bicyc", Seed: int64(seed), Completed: 2, Tasks: 2, MatrixTAg: tag, MatrixTAw: tag,
			TAg: train.MetricSet{ALast: metrics.ALast(tag), AInc: metrics.AInc(tag), FLast: metrics.FLast(tag, metrics.OldTasks),
				Steps: []float64{metrics.ALastAt(tag, 0), metrics.ALastAt(tag, 1)}}}
		runs = append(runs, r)
	}
	groups, err := report.Aggregate(runs)
	if err != nil {
		panic(err)
	}
	g := groups[0]
	fmt.Printf("%s over seeds %v: A_last %.1f ± %.1f %%, F_last %.1f ± %.1f %%\n", g.Variant, g.Seeds,
		100*g.TAg.ALast.Mean, 100*g.TAg.ALast.Std, 100*g.TAg.FLast.Mean, 100*g.TAg.FLast.Std)
	fmt.Printf("mean accuracy after task 2: %.2f\n", g.MeanTAg[1])
	// Output:
	// bicyc over seeds [0 1]: A_last 70.5 ± 0.7 %, F_last 29.0 ± 1.4 %
	// mean accuracy after task 2: [0.62 0.79]
}
