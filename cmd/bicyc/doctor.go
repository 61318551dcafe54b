package main

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/bicyc/bicyc/gpu"
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
	var asJSON, checkGPU bool
	var gpuRuns int
	var maxRelDiff float64
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Show the processor, its vector features and the BLAS kernels training runs on",
		Long: `doctor says what training runs on: the processor, the vector features it offers, and the OpenBLAS
kernel set in use, with who chose it. OpenBLAS picks kernels by processor model and falls back to its
oldest ones on models it does not know; bicyc then restarts itself once with OPENBLAS_CORETYPE set to the
widest set the processor runs. Set OPENBLAS_CORETYPE yourself to choose another set.

--gpu loads the CUDA libraries (docs/gpu.md says where they are looked for), runs a few layers' forward
pass and gradients (convolutions through cuDNN, a matrix product through cuBLAS) on the GPU and on the CPU
from the same weights and batch, and prints JSON: the device and libraries, or why CUDA could not load, and
per layer the largest relative differences and each device's step time. It exits non-zero unless every
layer ran on both devices within --max-rel-diff.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if checkGPU {
				ops.UseOpenBLAS()
				rep := gpu.Check(gpu.CheckOptions{Runs: gpuRuns, Tolerance: maxRelDiff})
				rep.CPUBLAS = "OpenBLAS, " + kernels.Current().Kernels + " kernels"
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
				if !rep.OK {
					return fmt.Errorf("doctor --gpu: the GPU check did not pass (see the JSON above)")
				}
				return nil
			}
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
	cmd.Flags().BoolVar(&checkGPU, "gpu", false, "compare layers run on the GPU (CUDA) with the CPU, as JSON")
	cmd.Flags().IntVar(&gpuRuns, "gpu-runs", 3, "with --gpu: timed steps per layer and device")
	cmd.Flags().Float64Var(&maxRelDiff, "max-rel-diff", 1e-4, "with --gpu: largest relative difference accepted")
	return cmd
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
