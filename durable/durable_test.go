package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bicyc/bicyc/lockfile"
)

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "metrics.json")
	if err := WriteFile(path, []byte("one")); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, "one", 0o644)
	// A replaced file keeps its permissions.
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("two")); err != nil {
		t.Fatal(err)
	}
	checkFile(t, path, "two", 0o600)
	if left := entries(t, dir); len(left) != 1 {
		t.Errorf("entries after two writes: %v, want metrics.json alone", left)
	}
	// A failed write names the file and leaves nothing behind.
	missing := filepath.Join(dir, "no-such-dir", "state.json")
	err := WriteFile(missing, []byte("x"))
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("write into a missing directory: %v, want an error naming %s", err, missing)
	}
}

// TestReplaceDir replaces a directory through the atomic exchange and
// through the two-rename fallback; either way dir ends up the new tree and
// nothing is left beside it.
func TestReplaceDir(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		name := "exchange"
		if fallback {
			name = "two renames"
		}
		t.Run(name, func(t *testing.T) {
			if fallback {
				exchangeDirs = func(a, b string) error { return errNoExchange }
				t.Cleanup(func() { exchangeDirs = exchange })
			}
			parent := t.TempDir()
			dir := filepath.Join(parent, "model")
			for i, content := range []string{"first", "second"} {
				tmp, err := NewDir(dir)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(filepath.Base(tmp), ".model.new-") || filepath.Dir(tmp) != parent {
					t.Fatalf("NewDir(%s) = %s, want a hidden sibling", dir, tmp)
				}
				if err := WriteFile(filepath.Join(tmp, "file"), []byte(content)); err != nil {
					t.Fatal(err)
				}
				if err := ReplaceDir(tmp, dir); err != nil {
					t.Fatalf("replacement %d: %v", i+1, err)
				}
				checkFile(t, filepath.Join(dir, "file"), content, 0o644)
				if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o755 {
					t.Errorf("replacement %d: %s mode %v, %v, want 0755", i+1, dir, info.Mode().Perm(), err)
				}
				if left := entries(t, parent); len(left) != 1 {
					t.Errorf("replacement %d: beside the directory: %v", i+1, left)
				}
			}
		})
	}
}

// TestRecover recreates what a crash between the fallback's two renames
// leaves (dir missing, the previous tree in ".<name>.old-*", a half-built
// ".<name>.new-*") and checks that Recover moves back a complete tree,
// drops an incomplete one, and clears the litter either way.
func TestRecover(t *testing.T) {
	complete := func(d string) bool {
		_, err := os.Stat(filepath.Join(d, "manifest"))
		return err == nil
	}
	for _, whole := range []bool{true, false} {
		parent := t.TempDir()
		dir := filepath.Join(parent, "model")
		old := filepath.Join(parent, ".model.old-1", "model")
		if err := os.MkdirAll(old, 0o755); err != nil {
			t.Fatal(err)
		}
		if whole {
			if err := WriteFile(filepath.Join(old, "manifest"), []byte("m")); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(filepath.Join(parent, ".model.new-2", "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := Recover(dir, complete); err != nil {
			t.Fatal(err)
		}
		_, err := os.Stat(filepath.Join(dir, "manifest"))
		if whole && err != nil {
			t.Errorf("the complete previous tree was not restored: %v", err)
		}
		if _, derr := os.Lstat(dir); !whole && !errors.Is(derr, fs.ErrNotExist) {
			t.Errorf("an incomplete previous tree was restored: %v", derr)
		}
		want := 0
		if whole {
			want = 1
		}
		if left := entries(t, parent); len(left) != want {
			t.Errorf("complete=%v: entries left %v", whole, left)
		}
	}
	// With dir in place, a held previous tree is only litter.
	parent := t.TempDir()
	dir := filepath.Join(parent, "model")
	if err := os.MkdirAll(filepath.Join(parent, ".model.old-1", "model"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Recover(dir, func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if left := entries(t, parent); len(left) != 1 {
		t.Errorf("entries left %v, want model alone", left)
	}
}

// TestRecoverLeavesLiveWriters: Recover removes the ".<name>.new-*" of a
// writer that is gone, and leaves that of a writer still at work (another
// live process here, or a recent one from another host).
func TestRecoverLeavesLiveWriters(t *testing.T) {
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Process.Kill(); live.Wait() })
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	boot := strings.Split(maker, ".")[0]
	liveStart, err := lockfile.ProcessStart(live.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "8")
	tmp, err := NewDir(dir) // this process: live
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * staleAfter)
	cases := []struct {
		name string
		kept bool
		at   time.Time
	}{
		{filepath.Base(tmp), true, time.Now()},
		{fmt.Sprintf(".8.new-%s.%d.%d-a", boot, live.Process.Pid, liveStart), true, time.Now()},
		{fmt.Sprintf(".8.new-%s.%d.%d-b", boot, live.Process.Pid, liveStart+1), false, time.Now()},
		{fmt.Sprintf(".8.new-%s.%d.%d-c", boot, gone.Process.Pid, 1), false, time.Now()},
		{".8.new-otherbot.12.34-d", true, time.Now()},
		{".8.new-otherbot.12.34-e", false, old},
		{".8.new-123", false, time.Now()}, // an older version's name
	}
	for _, c := range cases {
		p := filepath.Join(parent, c.name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, c.at, c.at); err != nil {
			t.Fatal(err)
		}
	}
	if err := Recover(dir, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		_, err := os.Stat(filepath.Join(parent, c.name))
		if kept := err == nil; kept != c.kept {
			t.Errorf("case %d %s: kept %v, want %v", i, c.name, kept, c.kept)
		}
	}
}

// TestCreateDir: a new directory replaces nothing but an empty one; the
// second of two writers of the same directory fails with fs.ErrExist and
// the first's tree stays whole, with either rename.
func TestCreateDir(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		if fallback {
			renameNew = func(a, b string) error { return errNoNoReplace }
			t.Cleanup(func() { renameNew = renameNoReplace })
		}
		parent := t.TempDir()
		dir := filepath.Join(parent, "9")
		if err := os.Mkdir(dir, 0o755); err != nil { // made empty by the user
			t.Fatal(err)
		}
		var tmps []string
		for _, content := range []string{"first", "second"} {
			tmp, err := NewDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteFile(filepath.Join(tmp, "manifest"), []byte(content)); err != nil {
				t.Fatal(err)
			}
			tmps = append(tmps, tmp)
		}
		if err := CreateDir(tmps[0], dir); err != nil {
			t.Fatalf("fallback %v: %v", fallback, err)
		}
		if err := CreateDir(tmps[1], dir); !errors.Is(err, fs.ErrExist) {
			t.Errorf("fallback %v: the second writer: %v, want fs.ErrExist", fallback, err)
		}
		checkFile(t, filepath.Join(dir, "manifest"), "first", 0o644)
		// ReplaceDir of a directory absent when it looked, created by
		// another writer before its rename, leaves the other's tree.
		other := filepath.Join(parent, "10")
		if err := os.MkdirAll(filepath.Join(other, "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := renameNew(tmps[1], other); err == nil {
			t.Errorf("fallback %v: renamed onto another writer's directory", fallback)
		} else if !errors.Is(err, errNoNoReplace) && !isNotEmpty(err) {
			t.Errorf("fallback %v: %v", fallback, err)
		}
	}
}

func checkFile(t *testing.T, path, want string, mode fs.FileMode) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != want {
		t.Fatalf("%s = %q, %v, want %q", path, b, err, want)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != mode {
		t.Errorf("%s mode %v, %v, want %v", path, info.Mode().Perm(), err, mode)
	}
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Name()
	}
	return names
}

// TestCreateFileNeverOverwrites: the first CreateFile wins, the second
// fails with fs.ErrExist and leaves the content and no temporary file.
func TestCreateFileNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.png")
	if err := CreateFile(path, []byte("first")); err != nil {
		t.Fatal(err)
	}
	err := CreateFile(path, []byte("second"))
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second CreateFile: %v, want fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "first" {
		t.Fatalf("content %q, want first", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d entries left in the directory, want 1", len(entries))
	}
}
