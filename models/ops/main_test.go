package ops

import (
	"os"
	"testing"
)

// TestMain registers OpenBLAS as gorgonia's BLAS, as the training binaries do.
func TestMain(m *testing.M) {
	UseOpenBLAS()
	os.Exit(m.Run())
}
