package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	run := t.TempDir()
	model := filepath.Join(run, "model")
	write := func(path, text string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, tc := range []struct {
		latest, manifest string // "" leaves the file out
		behind           bool
		err              string
	}{
		{"", `{"tasks": [[0]]}`, false, ""},
		{"task-02\n", "", false, ""},
		{"task-02\n", `{"tasks": [[0], [1]]}`, false, ""},
		{"task-03\n", `{"tasks": [[0], [1]]}`, true, ""},
		{"garbage\n", `{"tasks": []}`, false, "does not name a checkpoint"},
		{"task-03\n", `{`, false, "manifest.json"},
	} {
		os.RemoveAll(filepath.Join(run, CheckpointsDir))
		os.RemoveAll(model)
		if tc.latest != "" {
			write(filepath.Join(run, CheckpointsDir, LatestFile), tc.latest)
		}
		if tc.manifest != "" {
			write(filepath.Join(model, "manifest.json"), tc.manifest)
		}
		for _, check := range []func() (*Behind, error){
			func() (*Behind, error) { return Check(run, model) },
			func() (*Behind, error) { return CheckModel(model) },
		} {
			b, err := check()
			if (b != nil) != tc.behind || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("case %d: %+v, %v; want behind %v, error %q", i, b, err, tc.behind, tc.err)
			}
			if b != nil && (b.ModelTasks != 2 || b.RunTasks != 3 || !strings.Contains(b.String(), "bicyc export --run")) {
				t.Errorf("case %d: %+v %q", i, b, b)
			}
		}
	}
	// A model directory outside a run has nothing to compare with.
	if b, err := CheckModel(t.TempDir()); b != nil || err != nil {
		t.Errorf("model outside a run: %+v, %v", b, err)
	}
}
