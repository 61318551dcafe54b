package main

import (
	"strings"
	"testing"

	"github.com/bicyc/bicyc/internal/testmodel/small"
)

// TestRun runs the benchmark's smallest form on the tests' small model, so
// that it cannot rot: every path must answer 200 and be reported.
func TestRun(t *testing.T) {
	dir, _ := small.Get(t)
	defer small.Cleanup()
	var out strings.Builder
	if err := run(&out, options{model: dir, requests: 3, warmup: 1, batch: 8, batches: 2}); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	for _, want := range []string{"v1 /v1/classify", "v2 JSON BYTES (base64 PNG)", "v2 binary BYTES (PNG)", "v2 JSON FP32 [1,C,H,W]", "v2 binary FP32 [1,C,H,W]",
		"v2 JSON BYTES [8]", "v2 binary BYTES [8]", "v2 JSON FP32 [8,C,H,W]", "v2 binary FP32 [8,C,H,W]", "images/s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
