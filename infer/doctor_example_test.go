package infer_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/bicyc/bicyc/infer"
)

func ExampleCheckProviders() {
	modelDir, _ := exampleModel(0)
	s := infer.CheckSettings{Providers: []infer.Provider{infer.ProviderCUDA}, LatencyRuns: 20, Batch: 16, MinDuration: time.Millisecond}
	r, err := infer.CheckProviders(context.Background(), modelDir, nil, s, infer.WithLog(nil))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Images, "synthetic images:", r.Synthetic)
	for _, p := range r.Providers {
		switch {
		case p.Error != "":
			// Without a GPU, or without the CUDA libraries: why, by name.
			fmt.Println(p.Provider, "cannot run here, and says why")
		case p.MaxRelDiff == nil:
			fmt.Println(p.Provider, "is the reference")
		case *p.MaxRelDiff <= 1e-4:
			fmt.Println(p.Provider, "gives the cpu's distances")
		}
	}
	// On a machine without CUDA, as in this package's tests:

	// Output:
	// 64 synthetic images: true
	// cpu is the reference
	// cuda cannot run here, and says why
}
