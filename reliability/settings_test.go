package reliability

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runBicycToEnd runs the bicyc binary with args to its end (at most
// timeout) and returns its combined output and whether it succeeded.
func runBicycToEnd(t *testing.T, timeout time.Duration, args ...string) (string, bool) {
	t.Helper()
	p := startBicyc(t, args...)
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.kill()
		t.Fatalf("bicyc %q did not finish within %v:\n%s", args, timeout, p.Output())
	}
	return p.Output(), p.state.Success()
}

// TestRunNameStaysInRunDir: issue 33, row 1. A run name that is not one
// folder name is refused before anything is written, naming the rule;
// nothing appears in the run directory or beside it.
func TestRunNameStaysInRunDir(t *testing.T) {
	parent := t.TempDir()
	runDir := filepath.Join(parent, "R")
	for i, name := range []string{"../escape", "..", ".", "a/b", "new\nline", " lead"} {
		out, ok := runBicycToEnd(t, time.Minute, trainArgs(runDir, name)...)
		if ok || !strings.Contains(out, "invalid name") || !strings.Contains(out, "a run name is one folder name") {
			t.Errorf("case %d: --name %q: success %v, output:\n%s\nwant a refusal naming the rule", i, name, ok, out)
		}
		for _, dir := range []string{parent, runDir} {
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if e.Name() != "R" {
					t.Errorf("case %d: --name %q wrote %s", i, name, filepath.Join(dir, e.Name()))
				}
			}
		}
	}
}

// TestHostileSettingsRefusedBeforeWork: issue 33, rows 5, 6 and 9. Each
// bad setting ends the command at once with an error naming the key as
// the user wrote it; no run directory is created.
func TestHostileSettingsRefusedBeforeWork(t *testing.T) {
	parent := t.TempDir()
	big := filepath.Join(parent, "big.yaml")
	var b strings.Builder
	b.WriteString("stream:\n  class_order: [")
	for i := range 700000 { // 2.1 MB, twice config.MaxFileBytes
		fmt.Fprintf(&b, "%d, ", i%10)
	}
	b.WriteString("0]\n")
	if err := os.WriteFile(big, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-c", big}, []string{"big.yaml", "more than the limit of 1048576", "input too large"}},
		{[]string{"--set", "train.lr_first=+Inf"}, []string{"train.lr_first: must be a finite number, got +Inf"}},
		{[]string{"--set", "train.lr_first=1e300"}, []string{"train.lr_first: a learning rate must lie in (0, 10], got 1e+300"}},
		{[]string{"--set", "train.lr=0"}, []string{"train.lr: a learning rate must lie in (0, 10], got 0"}},
		{[]string{"--set", "train.momentum=NaN"}, []string{"train.momentum: must be a finite number, got NaN"}},
		{[]string{"--set", "train.clip_norm=NaN"}, []string{"train.clip_norm: must be a finite number, got NaN"}},
		{[]string{"--set", "classifier.shrink=NaN"}, []string{"classifier.shrink: must be a finite value >= 0, got NaN"}},
		{[]string{"--set", "train.batch_size=2000000000"}, []string{"train.batch_size: must lie in [2, 65536], got 2000000000"}},
		{[]string{"--set", "quick=false", "--set", "data.train_per_class=-5"}, []string{"data.train_per_class: must be >= 0 (0: all), got -5"}},
		{[]string{"--set", "train.epochs=1", "--set", "data.train_per_class=50"}, []string{
			"--set train.epochs=1: the quick profile replaces train.epochs; set quick_profile.epochs instead",
			"--set data.train_per_class=50: the quick profile replaces data.train_per_class; set quick_profile.train_per_class instead"}},
	} {
		runDir := filepath.Join(parent, fmt.Sprint("runs", i))
		start := time.Now()
		out, ok := runBicycToEnd(t, time.Minute, append(trainArgs(runDir, "r"), tc.args...)...)
		t.Logf("case %d: refused in %v", i, time.Since(start).Round(time.Millisecond))
		if ok {
			t.Errorf("case %d %q: succeeded, want a refusal:\n%s", i, tc.args, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("case %d %q: output lacks %q:\n%s", i, tc.args, w, out)
			}
		}
		if _, err := os.Stat(runDir); !os.IsNotExist(err) {
			t.Errorf("case %d: the run directory was created (%v)", i, err)
		}
	}
}
