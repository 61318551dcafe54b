// Command bicyc trains, evaluates, extends and exports exemplar-free
// class-incremental classifiers (BiCyc, ICLR 2026). Run `bicyc --help`.
package main

import (
	"fmt"
	"os"

	"github.com/bicyc/bicyc/kernels"
)

func main() {
	// First, before any side effect: it may restart the program once with
	// OpenBLAS's kernels for this processor (package kernels says why).
	if _, err := kernels.Ensure(); err != nil {
		fmt.Fprintln(os.Stderr, "bicyc: warning:", err)
	}
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "bicyc:", err)
		os.Exit(1)
	}
}
