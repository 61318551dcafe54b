//go:build cgo

package gpu

import (
	"testing"

	"github.com/bicyc/bicyc/kernels"
	"github.com/bicyc/bicyc/models/ops"
)

// TestMain runs the CPU side of the comparisons on OpenBLAS, as the training binaries do.
func TestMain(m *testing.M) {
	ops.UseOpenBLAS()
	kernels.RunTests(m)
}
