package train

import (
	"testing"

	"github.com/bicyc/bicyc/kernels"
)

// TestMain runs the tests on the OpenBLAS kernels the training binaries choose.
func TestMain(m *testing.M) { kernels.RunTests(m) }
