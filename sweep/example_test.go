package sweep_test

import (
	"fmt"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/sweep"
)

func ExampleSpec_Plan() {
	spec := sweep.Spec{Config: "configs/fmnist-t5-e10.yaml", Out: "runs/sweep", Seeds: 2,
		Methods: []config.Method{config.MethodBicyc, config.MethodAdaGauss}, Ablation: true}
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
