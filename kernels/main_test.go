package kernels

import "testing"

// TestMain runs the tests with the kernels Ensure chooses, as every training test binary does.
func TestMain(m *testing.M) { RunTests(m) }
