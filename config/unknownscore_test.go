package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/bicyc/bicyc/gauss"
)

// TestReadRunBeforeUnknownScore reads a run's config.yaml written before
// classifier.unknown_score existed: it answered by the mahalanobis score,
// so an export of it still does, named in the manifest (an empty score
// would take the default, vim).
func TestReadRunBeforeUnknownScore(t *testing.T) {
	full, err := yaml.Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.Split(string(full), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "unknown_score:") {
			kept = append(kept, line)
		}
	}
	if len(kept) != strings.Count(string(full), "\n") {
		t.Fatal("test setup: classifier.unknown_score not removed once")
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := ReadRun(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(Default(), c); len(d) != 1 || c.Classifier.UnknownScore != gauss.ScoreMahalanobis {
		t.Errorf("old run read with changes %v, want only classifier.unknown_score -> mahalanobis", d)
	}
}
