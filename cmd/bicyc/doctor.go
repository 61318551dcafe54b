package main

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/bicyc/bicyc/kernels"
	"github.com/bicyc/bicyc/models/ops"
)

// doctorReport is what `bicyc doctor` prints: the machine and the kernels training runs on.
type doctorReport struct {
	GoVersion  string         `json:"go_version"`
	GOMAXPROCS int            `json:"gomaxprocs"`
	OpThreads  int            `json:"op_threads"`
	Kernels    kernels.Status `json:"blas"`
}

func newDoctorCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Show the processor, its vector features and the BLAS kernels training runs on",
		Long: `doctor says what training runs on: the processor, the vector features it offers, and the OpenBLAS
kernel set in use, with who chose it. OpenBLAS picks kernels by processor model and falls back to its
oldest ones on models it does not know; bicyc then restarts itself once with OPENBLAS_CORETYPE set to the
widest set the processor runs. Set OPENBLAS_CORETYPE yourself to choose another set.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := doctorReport{
				GoVersion:  runtime.Version(),
				GOMAXPROCS: runtime.GOMAXPROCS(0),
				OpThreads:  ops.Threads(),
				Kernels:    kernels.Current(),
			}
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			k := r.Kernels
			fmt.Fprintf(w, "processor:     %s\n", orUnknown(k.CPUModel))
			fmt.Fprintf(w, "vendor:        %s\n", orUnknown(k.Features.Vendor))
			fmt.Fprintf(w, "features:      %s\n", k.CPUFeatures)
			fmt.Fprintf(w, "library:       %s\n", k.Library)
			fmt.Fprintf(w, "kernels:       %s (widest for this processor: %s)\n", k.Kernels, k.Best)
			fmt.Fprintf(w, "chosen by:     %s: %s\n", k.Source, k.Reason)
			fmt.Fprintf(w, "go:            %s, GOMAXPROCS %d, op threads %d\n", r.GoVersion, r.GOMAXPROCS, r.OpThreads)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
