package ops

import (
	"os"
	"testing"

	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// TestMain registers OpenBLAS as gorgonia's BLAS, as the training binaries do; run the tests with
// CGO_LDFLAGS=-lopenblas.
func TestMain(m *testing.M) {
	G.Use(netlib.Implementation{})
	os.Exit(m.Run())
}
