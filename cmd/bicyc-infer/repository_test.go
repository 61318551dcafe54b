package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/bundle"
)

// makeRepository copies the test model into a repository as fmnist/1 and
// returns the repository and the model's directory in it.
func makeRepository(t *testing.T) (root, modelDir string) {
	t.Helper()
	src, _ := testModel(t)
	root = t.TempDir()
	modelDir = filepath.Join(root, "fmnist")
	if err := os.CopyFS(filepath.Join(modelDir, "1"), os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return root, modelDir
}

// TestAddClassesNextVersion adds a class as the next version of a
// repository model: from its highest version without --model, then from a
// named one; each result opens verified with the added class, and the
// versions already there are untouched.
func TestAddClassesNextVersion(t *testing.T) {
	_, modelDir := makeRepository(t)
	labelled := filepath.Join(t.TempDir(), "labelled")
	classFolder(t, labelled, []int{5}, 0, 10)
	before := treeDigest(t, filepath.Join(modelDir, "1"))
	stdout, _, err := runCommand(t, nil, "add-classes", "--provider", "cpu", "--from", labelled, "--out", modelDir, "--next-version")
	if err != nil || !strings.Contains(stdout, "wrote "+filepath.Join(modelDir, "2")+": "+filepath.Join(modelDir, "1")+" plus 1 classes") {
		t.Fatalf("add-classes --next-version: %v\n%s", err, stdout)
	}
	b, err := bundle.Open(filepath.Join(modelDir, "2"))
	if err != nil || len(b.Manifest.Classes) != 4 || b.Manifest.Classes[3].Name != "Sandal" {
		t.Fatalf("version 2: %v", err)
	}
	if treeDigest(t, filepath.Join(modelDir, "1")) != before {
		t.Error("version 1 changed")
	}
	// From version 1 again, named: version 3.
	classFolder(t, labelled, []int{7}, 0, 10)
	os.RemoveAll(filepath.Join(labelled, "Sandal"))
	stdout, _, err = runCommand(t, nil, "add-classes", "--model", filepath.Join(modelDir, "1"), "--provider", "cpu", "--from", labelled, "--out", modelDir, "--next-version")
	if err != nil || !strings.Contains(stdout, "wrote "+filepath.Join(modelDir, "3")) {
		t.Fatalf("add-classes --model v1 --next-version: %v\n%s", err, stdout)
	}
	if b, err := bundle.Open(filepath.Join(modelDir, "3")); err != nil || len(b.Manifest.Classes) != 4 || b.Manifest.Classes[3].Name != "Sneaker" {
		t.Errorf("version 3: %v", err)
	}
	// An empty repository model has nothing to start from.
	if _, _, err := runCommand(t, nil, "add-classes", "--provider", "cpu", "--from", labelled, "--out", t.TempDir(), "--next-version"); err == nil || !strings.Contains(err.Error(), "no version directories") {
		t.Errorf("--next-version into an empty model without --model: %v", err)
	}
}
