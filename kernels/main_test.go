package kernels

import (
	"fmt"
	"os"
	"testing"
)

// TestMain runs the tests with the kernels Ensure chooses, as every training test binary does.
func TestMain(m *testing.M) {
	if _, err := Ensure(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(m.Run())
}
