package infer

import (
	"fmt"
	"testing"

	"github.com/bicyc/bicyc/bundle"
)

// TestManifestRuntimeVersionIsInfers checks that the ONNX Runtime release
// every manifest names as the minimum is the one infer requires: ONNX
// Runtime 1.N serves C API version N.
func TestManifestRuntimeVersionIsInfers(t *testing.T) {
	if want := fmt.Sprintf("1.%d.0", requiredAPIVersion); bundle.MinRuntimeVersion != want {
		t.Errorf("manifests say ONNX Runtime %s is enough, infer needs C API %d (ONNX Runtime %s)", bundle.MinRuntimeVersion, requiredAPIVersion, want)
	}
}
