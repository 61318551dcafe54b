package export_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/bicyc/bicyc/infer"
)

// TestMain starts ONNX Runtime through infer.InitRuntime, the one owner of
// the process's environment, from the library infer would load
// ($BICYC_ORT_LIB, else the path scripts/setup.sh installs to); a missing
// library fails the tests. It lives in the external test package because
// infer imports export (add-classes writes new classifier graphs). The
// environment lives until the process ends, as infer keeps it.
func TestMain(m *testing.M) {
	if _, err := infer.InitRuntime(""); err != nil {
		fmt.Fprintln(os.Stderr, "export tests need ONNX Runtime:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
