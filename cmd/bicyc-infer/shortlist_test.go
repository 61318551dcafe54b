package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/gauss"
)

// TestShortlistCommand runs bicyc-infer shortlist on the test model (10
// classes, too few for a shortlist): it writes a copy that says so and
// records the share, refuses a share out of [0, 1] naming the option,
// and refuses a missing --out; the source model is never modified.
func TestShortlistCommand(t *testing.T) {
	model, _ := testModel(t)
	before := treeDigest(t, model)
	out := filepath.Join(t.TempDir(), "v2")
	stdout, stderr, err := runCommand(t, nil, "shortlist", "--model", model, "--out", out, "--share", "0.05")
	if err != nil || !strings.Contains(stdout, "every class scored exactly (no shortlist applies)") {
		t.Fatalf("shortlist: %v\nstdout %s\nstderr %s", err, stdout, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil || !strings.Contains(string(raw), `"shortlist": 0.05`) {
		t.Errorf("the copy's manifest does not record the share 0.05: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	if _, _, err := runCommand(t, nil, "shortlist", "--model", model, "--out", bad, "--share", "1.5"); !errors.Is(err, gauss.ErrOptions) || !strings.Contains(err.Error(), "shortlist 1.5") {
		t.Errorf("--share 1.5: error %v, want one naming the shortlist option", err)
	}
	if _, err := os.Stat(bad); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--share 1.5 wrote %s: %v", bad, err)
	}
	if _, _, err := runCommand(t, nil, "shortlist", "--model", model); err == nil || !strings.Contains(err.Error(), "--out") {
		t.Errorf("no --out: error %v, want one naming --out", err)
	}
	if after := treeDigest(t, model); after != before {
		t.Errorf("the source model changed")
	}
}
