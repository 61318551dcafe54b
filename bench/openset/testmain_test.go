package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/bicyc/bicyc/kernels"
)

// TestMain runs the tests on the OpenBLAS kernels the training binaries choose (kernels.Ensure).
func TestMain(m *testing.M) {
	if _, err := kernels.Ensure(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(m.Run())
}
