package train

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/bundle"
)

// TestExportReadsOnlyTheRunDirectory trains two small tasks and checks that
// a standalone export is a pure writer: with the run's dataset gone (its
// config.yaml pointing at a missing folder) it writes the model directory
// the export after training wrote, byte for byte but the creation time and
// the configuration, calibrated on the held-out features the checkpoint
// stores. A checkpoint written before they were stored is refused, naming
// the file and the way out, `bicyc train --resume`, which exports it from
// the run's data with the same bytes.
func TestExportReadsOnlyTheRunDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST")
	}
	cfg := oneEpochConfig()
	dir := t.TempDir()
	r, err := New(cfg, dir, Options{Log: io.Discard, StopAfter: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Execute(context.Background()); err != nil {
		r.Close()
		t.Fatal(err)
	}
	trained, err := ExportAfterTraining(r)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(trained)
	if err != nil {
		t.Fatal(err)
	}
	if b.Manifest.Calibration == nil || b.Manifest.Calibration.HeldOutImages < 20 {
		t.Fatalf("export after training: calibration %+v, want one on the validation split", b.Manifest.Calibration)
	}

	cfgPath := filepath.Join(dir, "config.yaml")
	saved, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	moved := cfg
	moved.Data.Dir = filepath.Join(t.TempDir(), "absent")
	if err := writeConfig(cfgPath, moved); err != nil {
		t.Fatal(err)
	}
	standalone := filepath.Join(t.TempDir(), "model")
	if err := Export(dir, standalone, 0); err != nil {
		t.Fatalf("export without the dataset: %v", err)
	}
	sameModel(t, trained, standalone)

	if err := os.Remove(filepath.Join(checkpointDir(dir, 2), heldOutFile)); err != nil {
		t.Fatal(err)
	}
	err = Export(dir, filepath.Join(t.TempDir(), "model"), 0)
	if err == nil || !strings.Contains(err.Error(), heldOutFile) || !strings.Contains(err.Error(), "bicyc train --resume") {
		t.Fatalf("export of a checkpoint without held-out features: error %v, want one naming %s and bicyc train --resume", err, heldOutFile)
	}
	if err := os.WriteFile(cfgPath, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err = Resume(dir, Options{Log: io.Discard, StopAfter: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(t.TempDir(), "model")
	if err := os.Rename(trained, copied); err != nil {
		t.Fatal(err)
	}
	if _, err := ExportAfterTraining(r); err != nil {
		t.Fatal(err)
	}
	sameModel(t, copied, trained)
}

// sameModel checks that model directories a and b hold the same files with
// the same bytes, but for the manifest's creation time and configuration
// (and so manifest.sha256).
func sameModel(t *testing.T, a, b string) {
	t.Helper()
	entries, err := os.ReadDir(a)
	if err != nil {
		t.Fatal(err)
	}
	others, err := os.ReadDir(b)
	if err != nil || len(others) != len(entries) {
		t.Fatalf("%s has %d files, %s %d (%v)", a, len(entries), b, len(others), err)
	}
	for _, e := range entries {
		x, err1 := os.ReadFile(filepath.Join(a, e.Name()))
		y, err2 := os.ReadFile(filepath.Join(b, e.Name()))
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v, %v", e.Name(), err1, err2)
		}
		switch e.Name() {
		case bundle.DigestFile:
		case bundle.ManifestFile:
			if mx, my := manifestOf(t, x), manifestOf(t, y); mx != my {
				t.Errorf("manifests differ beyond created_at and config:\n%s\n%s", mx, my)
			}
		default:
			if !bytes.Equal(x, y) {
				t.Errorf("%s differs between %s and %s", e.Name(), a, b)
			}
		}
	}
}

// manifestOf is a manifest's JSON without created_at and config.
func manifestOf(t *testing.T, b []byte) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "created_at")
	delete(m, "config")
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
