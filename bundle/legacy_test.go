package bundle

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bicyc/bicyc/safetensors"
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

// TestDecodePrototypesReadsFullCovariances decodes prototypes.safetensors as
// bicyc wrote it before schema version 5: full [K,S,S] covariances and the
// factored classifier tables beside the bias. The covariances come back
// packed (an asymmetric pair averaged), the bias and flag as written, and
// the old tables are ignored.
func TestDecodePrototypesReadsFullCovariances(t *testing.T) {
	const k, s = 2, 2
	old := []safetensors.Tensor{
		{Name: "means", Shape: []int{k, s}, Data: []float32{1, 2, 3, 4}},
		{Name: "covariances", Shape: []int{k, s, s}, Data: []float32{2, 0.5, 0.5, 3, 1, 0.25, 0.75, 1}},
		{Name: "classifier.means", Shape: []int{k, s}, Data: []float32{0.4, 0.9, 0.6, 0.8}},
		{Name: "classifier.whiten", Shape: []int{k, s, s}, Data: []float32{1, 0, 0, 1, 1, 0, 0, 1}},
		{Name: "classifier.bias", Shape: []int{k}, Data: []float32{0.5, -1}},
	}
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, old, map[string]string{"format": "bicyc-prototypes", "classifier.normalize": "true"}); err != nil {
		t.Fatal(err)
	}
	p, err := DecodePrototypes(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if p.K != k || p.S != s || !slices.Equal(p.Means, []float32{1, 2, 3, 4}) ||
		!slices.Equal(p.Covariances, []float32{2, 0.5, 3, 1, 0.5, 1}) || !slices.Equal(p.Bias, []float32{0.5, -1}) || !p.Normalize {
		t.Errorf("decoded %+v", p)
	}
	g := p.Gaussians()
	if g[1].Cov.At(0, 1) != 0.5 || g[1].Cov.At(1, 0) != 0.5 || g[0].Cov.At(1, 1) != 3 {
		t.Errorf("Gaussians: class 0 %v, class 1 %v", g[0].Cov, g[1].Cov)
	}
}
