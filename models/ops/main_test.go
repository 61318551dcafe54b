package ops

import (
	"fmt"
	"os"
	"testing"

	"github.com/bicyc/bicyc/kernels"
)

// TestMain registers OpenBLAS as gorgonia's BLAS on the kernels kernels.Ensure chooses, as the training
// binaries do.
func TestMain(m *testing.M) {
	if _, err := kernels.Ensure(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	UseOpenBLAS()
	os.Exit(m.Run())
}
