package infer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/bundle"
)

// TestOpenVerifiesEveryFile damages a copy of the two-task bundle one file
// at a time, in every way a disk, a copy or a hand can: a flipped byte, one
// byte cut off, one byte appended, and the file replaced by the same file
// of another valid bundle (where they differ). Open must refuse each with an error wrapping
// bundle.ErrChecksum that names the file, including classifier.onnx, which
// infer does not load: a directory is served only if all of it verifies.
func TestOpenVerifiesEveryFile(t *testing.T) {
	f := loadFixture(t)
	src, err := bundle.Open(f.twoTasks)
	if err != nil {
		t.Fatal(err)
	}
	damages := []struct {
		name   string
		damage func(b []byte, other []byte) []byte
	}{
		{"flipped byte", func(b, _ []byte) []byte { b[len(b)/3] ^= 0x01; return b }},
		{"truncated", func(b, _ []byte) []byte { return b[:len(b)-1] }},
		{"appended", func(b, _ []byte) []byte { return append(b, 0) }},
		{"from the one-task bundle", func(_, other []byte) []byte { return other }},
	}
	i := 0
	for _, name := range slices.Sorted(maps.Keys(src.Manifest.Files)) {
		other, err := os.ReadFile(filepath.Join(f.oneTask, name))
		if errors.Is(err, os.ErrNotExist) {
			other = []byte("not a model file")
		} else if err != nil {
			t.Fatal(err)
		}
		for _, d := range damages {
			dir := copyBundle(t, f.twoTasks)
			path := filepath.Join(dir, name)
			if bytes.Equal(d.damage(readFile(t, path), other), readFile(t, path)) {
				continue // the fixtures share this file (the backbone)
			}
			if err := os.WriteFile(path, d.damage(readFile(t, path), other), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := Open(context.Background(), dir, WithProvider(ProviderCPU), WithLog(nil))
			if err == nil {
				c.Close()
			}
			if !errors.Is(err, bundle.ErrChecksum) || !strings.Contains(err.Error(), name) {
				t.Errorf("case %d: %s %s: error %v, want ErrChecksum naming the file", i, name, d.name, err)
			}
			i++
		}
	}
}

// TestOpenVerifiesSchemaVersion rewrites manifest.json's schema_version
// (missing, older, newer, a string): Open refuses each with
// bundle.ErrSchemaVersion, before reading anything else.
func TestOpenVerifiesSchemaVersion(t *testing.T) {
	f := loadFixture(t)
	versions := []any{nil, 0, bundle.SchemaVersion + 1, "1"}
	for i, v := range versions {
		dir := copyBundle(t, f.twoTasks)
		rewriteManifest(t, filepath.Join(dir, bundle.ManifestFile), func(m map[string]any) {
			if v == nil {
				delete(m, "schema_version")
			} else {
				m["schema_version"] = v
			}
		})
		c, err := Open(context.Background(), dir, WithProvider(ProviderCPU), WithLog(nil))
		if err == nil {
			c.Close()
		}
		wantErr := bundle.ErrSchemaVersion
		if _, isString := v.(string); isString {
			wantErr = bundle.ErrManifest
		}
		if !errors.Is(err, wantErr) || !strings.Contains(err.Error(), "manifest.json") {
			t.Errorf("case %d: schema_version %v: error %v, want %v naming manifest.json", i, v, err, wantErr)
		}
	}
}

// TestOpenVerifiesManifest edits preprocess.mean in manifest.json, an edit
// that would otherwise change every prediction silently: Open refuses it
// with bundle.ErrChecksum naming the manifest. Without the digest file (a
// directory exported by an older bicyc) the same directory opens and Open
// warns that its manifest is not verified.
func TestOpenVerifiesManifest(t *testing.T) {
	f := loadFixture(t)
	dir := copyBundle(t, f.twoTasks)
	path := filepath.Join(dir, bundle.ManifestFile)
	rewriteManifest(t, path, func(m map[string]any) { m["preprocess"].(map[string]any)["mean"] = []float64{0.9} })
	c, err := Open(context.Background(), dir, WithProvider(ProviderCPU), WithLog(nil))
	if err == nil {
		c.Close()
	}
	if !errors.Is(err, bundle.ErrChecksum) || !strings.Contains(err.Error(), path) {
		t.Errorf("edited mean: %v, want ErrChecksum naming %s", err, path)
	}
	legacy := copyBundle(t, f.twoTasks)
	if err := os.Remove(filepath.Join(legacy, bundle.DigestFile)); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	c, err = Open(context.Background(), legacy, WithProvider(ProviderCPU), WithLog(&log))
	if err != nil {
		t.Fatalf("a model without manifest.sha256 does not open: %v", err)
	}
	c.Close()
	if !strings.Contains(log.String(), "warning: model "+legacy+" has no manifest.sha256") {
		t.Errorf("no warning for an unverified manifest; log %q", log.String())
	}
}

// rewriteManifest decodes the manifest at path as generic JSON, applies
// edit and writes it back (leaving its digest as it was).
func rewriteManifest(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(readFile(t, path), &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOldClassNamesWarn: issue 42, row 5. A model made before class names
// alike up to letter case, or holding a bidirectional control, were
// refused still opens, with a warning naming them.
func TestOldClassNamesWarn(t *testing.T) {
	f := loadFixture(t)
	dir := copyBundle(t, f.twoTasks)
	if err := os.Remove(filepath.Join(dir, bundle.DigestFile)); err != nil {
		t.Fatal(err)
	}
	rewriteManifest(t, filepath.Join(dir, bundle.ManifestFile), func(m map[string]any) {
		classes := m["classes"].([]any)
		for i, name := range []string{"Shirt", "shirt", "evil\u202egnp"} {
			classes[i].(map[string]any)["name"] = name
		}
	})
	var log bytes.Buffer
	c, err := Open(context.Background(), dir, WithProvider(ProviderCPU), WithLog(&log))
	if err != nil {
		t.Fatalf("a model with old class names does not open: %v", err)
	}
	c.Close()
	for _, want := range []string{`class names "Shirt" and "shirt" look alike`, "U+202E"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("no warning %q; log %q", want, log.String())
		}
	}
}
