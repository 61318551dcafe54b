package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAddClassesFolderRule: issue 33, rows 2, 7 and 8, through the
// add-classes command. Class names out of bounds are refused all at once
// with the rule, not as duplicates; a symlinked class folder is a class
// and a hidden one is reported; unreadable images are named all at once,
// and --skip-unreadable adds the class from the rest.
func TestAddClassesFolderRule(t *testing.T) {
	model, _ := testModel(t)
	root := t.TempDir()
	sandals := filepath.Join(root, "elsewhere")
	classFolder(t, sandals, []int{5}, 0, 8) // elsewhere/Sandal
	mkClass := func(dir string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(dir, os.DirFS(filepath.Join(sandals, "Sandal"))); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"new\nline", " lead", "Cl\xffass"} {
		mkClass(filepath.Join(root, "named", name))
	}
	if err := os.MkdirAll(filepath.Join(root, "linked"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(sandals, "Sandal"), filepath.Join(root, "linked", "Sandal")); err != nil {
		t.Fatal(err)
	}
	mkClass(filepath.Join(root, "linked", "..."))
	mkClass(filepath.Join(root, "broken", "Sandal"))
	for _, name := range []string{"cut.png", "text.jpg"} {
		if err := os.WriteFile(filepath.Join(root, "broken", "Sandal", name), []byte("not an image"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, tc := range []struct {
		from   string
		extra  []string
		ok     bool
		want   []string // in the error, or in stdout and stderr
		stderr []string
	}{
		{"named", nil, false, []string{"3 problems with class folders", `"new\nline"`, `" lead"`, `"Cl\xffass"`, "a class name is valid UTF-8"}, nil},
		{"linked", nil, true, []string{"plus 1 classes", `"Sandal"`, "from 8 images"}, []string{`...: hidden (name starts with "."), not read`}},
		{"broken", nil, false, []string{"2 of 10 image files are unreadable", "cut.png", "text.jpg", "--skip-unreadable"}, nil},
		{"broken", []string{"--skip-unreadable"}, true, []string{"from 8 images"}, []string{"left out, unreadable", "cut.png", "text.jpg"}},
	} {
		out := filepath.Join(root, "out", tc.from+strings.Join(tc.extra, ""))
		args := append([]string{"add-classes", "--model", model, "--provider", "cpu", "--from", filepath.Join(root, tc.from), "--out", out}, tc.extra...)
		stdout, stderr, err := runCommand(t, nil, args...)
		got := stdout
		if err != nil {
			got = err.Error()
		}
		if (err == nil) != tc.ok {
			t.Errorf("case %d: error %v, want success %v\n%s", i, err, tc.ok, stderr)
		}
		if strings.Contains(got, "duplicate") {
			t.Errorf("case %d: %q calls a name a duplicate", i, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("case %d: %q lacks %q", i, got, w)
			}
		}
		for _, w := range tc.stderr {
			if !strings.Contains(stderr, w) {
				t.Errorf("case %d: stderr %q lacks %q", i, stderr, w)
			}
		}
		if _, serr := os.Stat(out); (serr == nil) != tc.ok {
			t.Errorf("case %d: output written %v, want %v", i, serr == nil, tc.ok)
		}
	}
}
