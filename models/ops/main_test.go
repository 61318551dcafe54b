package ops

import (
	"testing"

	"github.com/bicyc/bicyc/kernels"
)

// TestMain registers OpenBLAS as gorgonia's BLAS on the kernels kernels.Ensure chooses, as the training
// binaries do.
func TestMain(m *testing.M) {
	UseOpenBLAS()
	kernels.RunTests(m)
}
