package reliability

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/bundle"
)

// TestTwoLearnersOneRun: issue 42, row 1, with real bicyc processes. While
// one bicyc learn trains on a run, a second learn and an export into the
// run fail at once naming it (pid, host); a third learn with --wait waits
// and then learns after it, so the run ends with both tasks, in order, and
// its model holds them.
func TestTwoLearnersOneRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST with the real bicyc binary")
	}
	wait := startReference(t)
	src := t.TempDir()
	for _, split := range []string{"train", "test"} {
		writeInverted(t, filepath.Join(src, "a", split, "InvBag"), 8, 20)
		writeInverted(t, filepath.Join(src, "b", split, "InvBoot"), 9, 20)
	}
	run := copyRun(t, wait())
	learn := func(folder string, extra ...string) []string {
		return append([]string{"learn", "--run", run, "--train", filepath.Join(src, folder, "train"), "--test", filepath.Join(src, folder, "test")}, extra...)
	}
	first := startBicyc(t, learn("a")...)
	if !first.waitFor("learning task 3", runTimeout) {
		t.Fatalf("the first learn did not start training:\n%s", first.Output())
	}
	holder := fmt.Sprintf("pid %d on ", first.cmd.Process.Pid)
	for _, args := range [][]string{learn("b"), {"export", "--run", run}} {
		out, ok := runBicycToEnd(t, runTimeout, args...)
		if ok || !strings.Contains(out, "another process is writing the run") || !strings.Contains(out, holder) || !strings.Contains(out, "--wait") {
			t.Errorf("bicyc %s while learn runs: success %v, want a refusal naming %q:\n%s", args[0], ok, holder, out)
		}
	}
	waiter := startBicyc(t, learn("b", "--wait", "10m")...)
	first.finish(t, runTimeout)
	waiter.finish(t, runTimeout)
	if !strings.Contains(waiter.Output(), "waiting up to 10m0s for run") || !strings.Contains(waiter.Output(), "learning task 4") {
		t.Errorf("the waiting learn:\n%s", waiter.Output())
	}
	b, err := bundle.Open(filepath.Join(run, "model"))
	if err != nil {
		t.Fatal(err)
	}
	m := b.Manifest
	if len(m.Tasks) != 4 || m.Classes[len(m.Classes)-2].Name != "InvBag" || m.Classes[len(m.Classes)-1].Name != "InvBoot" {
		t.Errorf("the model after two learns: %d tasks, classes %v; want 4 tasks ending InvBag, InvBoot", len(m.Tasks), m.Classes)
	}
}

// treeDigest maps every entry under dir to its mode, size and content
// digest (files), so a change anywhere shows.
func treeDigest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := fmt.Sprintf("%v %d %v", info.Mode(), info.Size(), info.ModTime().UnixNano())
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			v += " " + hex.EncodeToString(sum[:])
		}
		out[path] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readOnlyBicyc runs the bicyc binary with args while dir is read-only: in
// a mount namespace where dir is a read-only bind mount (unshare -rm, where
// user namespaces are allowed: root's writes are refused too), else with
// every write permission removed (which root bypasses: the caller compares
// the tree).
func readOnlyBicyc(t *testing.T, dir string, args ...string) (string, bool, string) {
	t.Helper()
	bin := bicycBinary(t)
	script := `mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"`
	if err := exec.Command("unshare", "-rm", "sh", "-c", script, "sh", dir, "true").Run(); err == nil {
		cmd := exec.Command("unshare", append([]string{"-rm", "sh", "-c", script, "sh", dir, bin}, args...)...)
		cmd.Env = childEnv()
		out, err := cmd.CombinedOutput()
		return string(out), err == nil, "read-only bind mount"
	}
	if out, err := exec.Command("chmod", "-R", "a-w", dir).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v\n%s", err, out)
	}
	defer exec.Command("chmod", "-R", "u+w", dir).Run()
	cmd := exec.Command(bin, args...)
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	return string(out), err == nil, "write permissions removed"
}

// TestReadOnlyRun: issue 42, row 6. bicyc eval and bicyc export --out
// elsewhere work on a read-only run directory and change nothing in it.
func TestReadOnlyRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST with the real bicyc binary")
	}
	run := copyRun(t, startReference(t)())
	before := treeDigest(t, run)
	out, ok, how := readOnlyBicyc(t, run, "eval", "--run", run)
	if !ok || !strings.Contains(out, "A_last") {
		t.Errorf("eval of a read-only run (%s): success %v:\n%s", how, ok, out)
	}
	model := filepath.Join(t.TempDir(), "model")
	out, ok, _ = readOnlyBicyc(t, run, "export", "--run", run, "--out", model)
	if !ok {
		t.Errorf("export --out elsewhere of a read-only run (%s): %s", how, out)
	}
	if _, err := bundle.Open(model); err != nil {
		t.Errorf("the exported model: %v", err)
	}
	after := treeDigest(t, run)
	for path, v := range after {
		if before[path] != v {
			t.Errorf("%s changed or appeared (%s)", path, how)
		}
	}
	for path := range before {
		if _, ok := after[path]; !ok {
			t.Errorf("%s disappeared (%s)", path, how)
		}
	}
}

// TestStaleTemporaryFilesRemoved: issue 42, row 7. The temporary files a
// killed writer leaves in a run are removed when the run is next opened
// to write (here bicyc train --resume of a finished run), and the log
// names them.
func TestStaleTemporaryFilesRemoved(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST with the real bicyc binary")
	}
	run := copyRun(t, startReference(t)())
	stale := []string{".stream.json.tmp123", ".metrics.json.tmp456", filepath.Join("checkpoints", ".latest.tmp789")}
	for _, name := range stale {
		must(t, os.WriteFile(filepath.Join(run, name), []byte("half"), 0o644))
	}
	out, ok := runBicycToEnd(t, runTimeout, "train", "--resume", run)
	if !ok {
		t.Fatalf("resume: %s", out)
	}
	for _, name := range stale {
		path := filepath.Join(run, name)
		if _, err := os.Lstat(path); err == nil {
			t.Errorf("%s is still there", path)
		}
		if !strings.Contains(out, "removed "+path) {
			t.Errorf("the log does not name %s:\n%s", path, out)
		}
	}
}
