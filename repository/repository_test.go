package repository

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLayout builds a repository on disk: models are the directories with
// valid names, versions the directories named by positive numbers without
// leading zeros; hidden entries and files are neither.
func TestLayout(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/1", "a/2", "a/10", "a/007", "a/.3.new-x", "b/1", ".hidden/1", "bad name/1"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "a", "11"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	models, err := Models(root)
	if err != nil || !slices.Equal(models, []string{"a", "b"}) {
		t.Fatalf("Models: %q %v, want [a b]", models, err)
	}
	found, err := Versions(filepath.Join(root, "a"))
	if err != nil || len(found) != 3 || found[10] != filepath.Join(root, "a", "10") {
		t.Fatalf("Versions: %v %v, want 1, 2 and 10", found, err)
	}
	if latest, err := LatestVersion(filepath.Join(root, "a")); err != nil || latest != filepath.Join(root, "a", "10") {
		t.Errorf("LatestVersion: %s %v", latest, err)
	}
	if next, err := NextVersion(filepath.Join(root, "a")); err != nil || next != filepath.Join(root, "a", "11") {
		t.Errorf("NextVersion: %s %v", next, err)
	}
	if next, err := NextVersion(filepath.Join(root, "new")); err != nil || next != filepath.Join(root, "new", "1") {
		t.Errorf("NextVersion of a new model: %s %v", next, err)
	}
	if _, err := Versions(filepath.Join(root, "missing")); !errors.Is(err, ErrNotFound) {
		t.Errorf("Versions of a missing model: %v, want ErrNotFound", err)
	}
	if _, err := LatestVersion(filepath.Join(root, "new")); err == nil {
		t.Error("LatestVersion of a model without versions succeeded")
	}
	for _, c := range []struct {
		dir   string
		model string
		ok    bool
	}{{"r/a/3", "r/a", true}, {"r/a/03", "", false}, {"r/.a/3", "r/.a", false}, {"r/a", "", false}} {
		if m, ok := VersionOf(c.dir); ok != c.ok || (ok && m != c.model) {
			t.Errorf("VersionOf(%s) = %s %v, want %s %v", c.dir, m, ok, c.model, c.ok)
		}
	}
}

// TestCreateNextVersionSkipsTaken: when another writer takes the next
// number first (create fails with fs.ErrExist), the number after it is
// tried; other errors end it.
func TestCreateNextVersionSkipsTaken(t *testing.T) {
	modelDir := filepath.Join(t.TempDir(), "m")
	var tried []string
	dir, err := CreateNextVersion(modelDir, func(dir string) error {
		tried = append(tried, filepath.Base(dir))
		if len(tried) == 1 {
			// Another writer creates version 1 meanwhile.
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			return fmt.Errorf("create %s: %w", dir, fs.ErrExist)
		}
		return os.MkdirAll(dir, 0o755)
	})
	if err != nil || !slices.Equal(tried, []string{"1", "2"}) || dir != filepath.Join(modelDir, "2") {
		t.Fatalf("CreateNextVersion: %s %v after trying %v, want 2 after 1", dir, err, tried)
	}
	boom := errors.New("disk full")
	if _, err := CreateNextVersion(modelDir, func(string) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("CreateNextVersion: %v, want the create error", err)
	}
}
