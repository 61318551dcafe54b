// Command bicyc trains, evaluates, extends and exports exemplar-free
// class-incremental classifiers (BiCyc, ICLR 2026). Run `bicyc --help`.
package main

import (
	"fmt"
	"os"

	"github.com/bicyc/bicyc/kernels"
	"github.com/bicyc/bicyc/sweep"
)

func main() {
	// First, before any side effect: it may restart the program once with
	// OpenBLAS's kernels for this processor (package kernels says why).
	if _, err := kernels.Ensure(); err != nil {
		fmt.Fprintln(os.Stderr, "bicyc: warning:", err)
	}
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "bicyc:", err)
		// A sweep worker's refusals have their own statuses, which the
		// scheduler's record of the task keeps (sweep.ExitCode).
		os.Exit(sweep.ExitCode(err))
	}
}
