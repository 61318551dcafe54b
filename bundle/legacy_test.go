package bundle

import (
	"path/filepath"
	"testing"
)

// TestOpenReadsSchemaVersion1 opens a model directory whose manifest is of
// schema version 1, which numbered tasks from 0: Open returns its classes
// with tasks numbered from 1, as version 2 writes them, and a class whose
// version-1 task disagrees with the stream is still refused.
func TestOpenReadsSchemaVersion1(t *testing.T) {
	m, files := testModel(t)
	dir := filepath.Join(t.TempDir(), "model")
	if err := Write(dir, m, files); err != nil {
		t.Fatal(err)
	}
	rewriteManifest(t, dir, func(raw map[string]any) {
		raw["schema_version"] = 1
		for _, c := range raw["classes"].([]any) {
			class := c.(map[string]any)
			class["task"] = class["task"].(float64) - 1
		}
	})
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b.Manifest.SchemaVersion != SchemaVersion {
		t.Errorf("schema version %d after Open, want %d", b.Manifest.SchemaVersion, SchemaVersion)
	}
	for i, c := range b.Manifest.Classes {
		if want := m.Classes[i].Task; c.Task != want {
			t.Errorf("class %d (id %d): task %d, want %d", i, c.ID, c.Task, want)
		}
	}
	rewriteManifest(t, dir, func(raw map[string]any) {
		raw["classes"].([]any)[2].(map[string]any)["task"] = 0.0
	})
	if _, err := Open(dir); err == nil {
		t.Error("a version-1 manifest putting a task-2 class in task 1 was accepted")
	}
}
