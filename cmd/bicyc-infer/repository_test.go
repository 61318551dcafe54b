package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/lockfile"

	"github.com/bicyc/bicyc/repository"
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

// TestAddClassesTwoWriters: issue 42, row 1. Two real bicyc-infer
// add-classes --next-version processes on one repository model: at once,
// exactly one wins and the other fails naming the holder, or both land in
// distinct versions; with --wait both land, the later one built on the
// earlier, so the highest version has every class added. A lock held by
// another process (this test) is named in the refusal.
func TestAddClassesTwoWriters(t *testing.T) {
	bin := buildBinary(t)
	_, modelDir := makeRepository(t)
	folders := map[string]string{} // class name -> its folder of class folders
	for _, y := range []int{5, 7, 8, 9} {
		dir := filepath.Join(t.TempDir(), "labelled")
		classFolder(t, dir, []int{y}, 0, 10)
		folders[data.FashionMNISTClasses[y]] = dir
	}
	won := addClassesAtOnce(t, bin, modelDir, folders, "Sandal", "Sneaker")
	won = append(won, addClassesAtOnce(t, bin, modelDir, folders, "Bag", "Ankle boot", "--wait", "2m")...)
	latest, err := repository.LatestVersion(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(1 + len(won)); filepath.Base(latest) != want {
		t.Errorf("highest version %s after %d successful writers, want %s", latest, len(won), want)
	}
	names := versionClasses(t, latest)
	for _, class := range won {
		if !slices.Contains(names, class) {
			t.Errorf("the highest version lacks %q, added by a writer that succeeded: %v", class, names)
		}
	}
	if len(won) < 3 {
		t.Errorf("%d writers succeeded, want both with --wait and at least one without: %v", len(won), won)
	}

	// A holder that is not bicyc-infer: named, and waited for.
	l, _, _, err := lockfile.Acquire(context.Background(), filepath.Join(modelDir, repository.LockFile), lockfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "add-classes", "--provider", "cpu", "--from", folders["Bag"], "--out", modelDir, "--next-version").CombinedOutput()
	if err == nil || !strings.Contains(string(out), fmt.Sprintf("held by another writer: pid %d on ", os.Getpid())) || !strings.Contains(string(out), "--wait") {
		t.Errorf("add-classes while another process holds the lock: %v\n%s", err, out)
	}
	// A version named explicitly (DIR/<name>/<n>) is written under the
	// same lock, by every authoring command.
	next := filepath.Join(modelDir, "99")
	out, err = exec.Command(bin, "shortlist", "--model", latest, "--out", next).CombinedOutput()
	if err == nil || !strings.Contains(string(out), fmt.Sprintf("held by another writer: pid %d on ", os.Getpid())) {
		t.Errorf("shortlist into a version while another process holds the lock: %v\n%s", err, out)
	}
	l.Release()
	if out, err := exec.Command(bin, "shortlist", "--model", latest, "--out", next, "--wait", "1m").CombinedOutput(); err != nil {
		t.Errorf("shortlist into a free version: %v\n%s", err, out)
	}
}

// addClassesAtOnce runs two add-classes --next-version writers at once
// into the repository model modelDir, adding classes a and b (their
// folders in folders) with the extra flags, and returns the classes whose
// writer succeeded; without extra flags a writer may only fail on the
// other's lock.
func addClassesAtOnce(t *testing.T, bin, modelDir string, folders map[string]string, a, b string, extra ...string) []string {
	t.Helper()
	outs := make([]string, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, class := range []string{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append([]string{"add-classes", "--provider", "cpu", "--from", folders[class], "--out", modelDir, "--next-version"}, extra...)
			out, err := exec.Command(bin, args...).CombinedOutput()
			outs[i], errs[i] = string(out), err
		}()
	}
	wg.Wait()
	var won []string
	for i, class := range []string{a, b} {
		switch {
		case errs[i] == nil:
			won = append(won, class)
		case len(extra) > 0 || !strings.Contains(outs[i], "held by another writer: pid "):
			t.Errorf("add-classes %s %v: %v\n%s", class, extra, errs[i], outs[i])
		}
	}
	return won
}

// versionClasses returns the class names of the model directory dir.
func versionClasses(t *testing.T, dir string) []string {
	b, err := bundle.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range b.Manifest.Classes {
		names = append(names, c.Name)
	}
	return names
}

// TestUnusedModelFlagsRefused: issue 42, row 4. A model flag given to a
// command that does not use it is an error naming it, before any work.
func TestUnusedModelFlagsRefused(t *testing.T) {
	model, _ := testModel(t)
	out := filepath.Join(t.TempDir(), "out")
	for i, c := range []struct {
		args []string
		want string
	}{
		{[]string{"add-classes", "--model", model, "--from", out, "--out", out, "--top-k", "3", "--threshold", "2"}, "bicyc-infer add-classes does not use --threshold, --top-k"},
		{[]string{"calibrate", "--model", model, "--from", out, "--out", out, "--accept-rate", "0.9"}, "bicyc-infer calibrate does not use --accept-rate"},
		{[]string{"shortlist", "--model", model, "--out", out, "--provider", "cpu"}, "bicyc-infer shortlist does not use --provider"},
		{[]string{"add-classes", "--model", model, "--from", out, "--out", out, "--wait", "1m"}, "add-classes --wait goes with an --out that is a repository model's version"},
	} {
		_, _, err := runCommand(t, nil, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: %v, want an error naming %q", i, err, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written", out)
	}
}
