package train

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/config"
)

// TestModelDir checks where a run exports by default, for bicyc export
// (DefaultModelDir, from the run's config.yaml) and after training
// (ModelDir): export.dir when set, else <run>/model.
func TestModelDir(t *testing.T) {
	for i, c := range []struct{ exportDir, want string }{
		{"", "model"},
		{"shipped/fmnist", "shipped/fmnist"},
	} {
		run := t.TempDir()
		cfg := config.Default()
		cfg.Export.Dir = c.exportDir
		if err := writeConfig(filepath.Join(run, "config.yaml"), cfg); err != nil {
			t.Fatal(err)
		}
		want := c.want
		if c.exportDir == "" {
			want = filepath.Join(run, c.want)
		}
		got, err := DefaultModelDir(run)
		if err != nil || got != want || ModelDir(cfg, run) != want {
			t.Errorf("case %d: DefaultModelDir %q (%v), ModelDir %q; want %q", i, got, err, ModelDir(cfg, run), want)
		}
	}
	missing := t.TempDir()
	if _, err := DefaultModelDir(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("a run without config.yaml: error %v, want one naming the run", err)
	}
}
