package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/bicyc/bicyc/config"
)

// TestTrainForkRefusals: --fork reads the source run's configuration, and
// refuses to overwrite the source or to change a key that task 1 depends
// on, before it trains or writes anything.
func TestTrainForkRefusals(t *testing.T) {
	runs := t.TempDir()
	src := filepath.Join(runs, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.RunDir, cfg.RunName = runs, "src"
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "config.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		args []string
		want string
	}{
		{[]string{"train", "--fork", src}, "would be " + src + " itself"},
		{[]string{"train", "--fork", src, "--name", "new", "--set", "train.lr_first=0.05"}, "configuration changes task 1: train.lr_first differ"},
		{[]string{"train", "--fork", src, "--name", "new", "--seed", "3", "--method", "finetune"}, "seed differ"},
		{[]string{"train", "--fork", src, "--resume", src}, "none of the others can be"},
	}
	for i, c := range cases {
		out, err := runCLI(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d %v: error %v, want one containing %q\n%s", i, c.args, err, c.want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(runs, "new")); !os.IsNotExist(err) {
		t.Errorf("a refused fork left a run directory behind (%v)", err)
	}
}
