//go:build cgo

package main

import (
	"fmt"
	"os"

	"github.com/bicyc/bicyc/kernels"
	"github.com/bicyc/bicyc/models/ops"
)

// useBLAS makes the CPU ops multiply with OpenBLAS on the kernels bicyc's training would choose (it may
// restart the program once with OPENBLAS_CORETYPE set: package kernels) and names them.
func useBLAS() string {
	if _, err := kernels.Ensure(); err != nil {
		fmt.Fprintln(os.Stderr, "bicyc-gpucheck: warning:", err)
	}
	ops.UseOpenBLAS()
	return kernels.Current().String()
}
