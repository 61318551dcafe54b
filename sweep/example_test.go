package sweep_test

import (
	"fmt"
	"strconv"
	"strings"

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

// ExampleNewPlan lists the cells of a sweep as `bicyc sweep --plan` does:
// each seed's adagauss run forks task 1 from its bicyc run, so it waits for
// it, one wave later.
func ExampleNewPlan() {
	spec := sweep.Spec{Config: "configs/fmnist-t5.yaml", Out: "runs/sweep", Seeds: 2,
		Methods: []config.Method{config.MethodBicyc, config.MethodAdaGauss}}
	// What `bicyc sweep` gets from the config file and the sets.
	configure := func(sets []string) (config.Config, error) {
		c := config.Default()
		c.Export.Enabled = false
		for _, kv := range sets {
			key, value, _ := strings.Cut(kv, "=")
			switch key {
			case "method":
				c.Method = config.Method(value)
			case "seed":
				c.Seed, _ = strconv.ParseInt(value, 10, 64)
			case "run_dir":
				c.RunDir = value
			case "run_name":
				c.RunName = value
			}
		}
		return c, nil
	}
	plan, err := sweep.NewPlan(spec, configure)
	if err != nil {
		panic(err)
	}
	fmt.Print(plan.Format())
	fmt.Println(plan.Waves())
	// Output:
	// cell  wave run directory                            waits for
	// 0     0    runs/sweep/bicyc-s0                      -
	// 1     1    runs/sweep/adagauss-s0                   cell 0 bicyc-s0: task 1 (fork)
	// 2     0    runs/sweep/bicyc-s1                      -
	// 3     1    runs/sweep/adagauss-s1                   cell 2 bicyc-s1: task 1 (fork)
	// [[0 2] [1 3]]
}
