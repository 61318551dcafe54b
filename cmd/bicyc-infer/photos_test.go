package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/data"
)

// TestEveryValidPhotoReads: issue 33, row 2, with the real binary. Every
// image of libjxl-testdata's flower folder (JPEGs of every sampling libjxl
// tests, progressive and baseline, and PNGs; scripts/setup.sh installs the
// package) is answered; none is refused as corrupt or unsupported.
func TestEveryValidPhotoReads(t *testing.T) {
	const flower = "/usr/share/libjxl-testdata/jxl/flower"
	files, skipped, err := data.ImageFiles(flower)
	if err != nil || len(files) < 19 || len(skipped) > 0 {
		t.Fatalf("%s: %d image files, %v, %v; install Debian's libjxl-testdata", flower, len(files), skipped, err)
	}
	model, _ := testModel(t)
	cmd := exec.Command(buildBinary(t), "--model", model, "--provider", "cpu", "--json", flower)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bicyc-infer %s: %v\n%s", flower, err, stderr.String())
	}
	answered := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if len(r.Predictions) == 0 || r.Error != "" {
			t.Errorf("%s: no prediction (%s)", r.File, r.Error)
		}
		answered++
	}
	if answered != len(files) || stderr.Len() > 0 {
		t.Errorf("%d of %d files answered; stderr:\n%s", answered, len(files), stderr.String())
	}
}
