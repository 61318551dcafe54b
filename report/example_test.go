package report_test

import (
	"fmt"

	"github.com/bicyc/bicyc/report"
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
