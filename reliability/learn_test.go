package reliability

import (
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/rundir"
)

// writeInverted writes n Fashion-MNIST test images of class label, their
// grey levels inverted (classes the run has never seen), as PNGs in dir.
func writeInverted(t *testing.T, dir string, label, n int) {
	t.Helper()
	_, test, err := data.LoadFashionMNIST("")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	written := 0
	for i := 0; i < test.Len() && written < n; i++ {
		if test.Labels[i] != label {
			continue
		}
		img := image.NewGray(image.Rect(0, 0, 28, 28))
		for j, v := range test.Image(i) {
			img.Pix[j] = 255 - v
		}
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%03d.png", written)))
		if err != nil {
			t.Fatal(err)
		}
		if err := png.Encode(f, img); err != nil {
			t.Fatal(err)
		}
		f.Close()
		written++
	}
}

// copyRun copies the finished reference run, so each case learns on its own.
func copyRun(t *testing.T, ref string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "run")
	if out, err := exec.Command("cp", "-a", ref, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	return dst
}

// TestLearnReadsFoldersByOneRule: issue 33, rows 2, 7 and 8, with the real
// bicyc learn. JPEGs of sampling factors Go's decoder refuses train; a
// symlinked class folder is a class; a hidden one is
// skipped and said so; class names out of bounds are refused all at once;
// unreadable images are named all at once, and --skip-unreadable trains on
// the rest. The first three cases stop before training or are killed once
// training starts.
func TestLearnReadsFoldersByOneRule(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST with the real bicyc binary")
	}
	wait := startReference(t)
	src := t.TempDir()
	writeInverted(t, filepath.Join(src, "elsewhere", "InvBag"), 8, 20)
	for _, split := range []string{"train", "test"} {
		writeInverted(t, filepath.Join(src, split, "InvBoot"), 9, 20)
		writeInverted(t, filepath.Join(src, split, "..."), 9, 3)
		must(t, os.Symlink(filepath.Join(src, "elsewhere", "InvBag"), filepath.Join(src, split, "InvBag")))
	}
	// Valid JPEGs Go's image/jpeg refuses (issue 33, row 2): they train.
	for _, name := range []string{"asymmetric.jpg", "luma-subsampled.jpg", "rgb-blue-subsampled.jpg"} {
		must(t, exec.Command("cp", filepath.Join("..", "imaging", "testdata", "sampling", name), filepath.Join(src, "train", "InvBoot")).Run())
	}
	bad := filepath.Join(src, "badnames")
	for _, name := range []string{"new\nline", " lead", "Cl\xffass", "fine"} {
		writeInverted(t, filepath.Join(bad, name), 9, 3)
	}
	broken := filepath.Join(src, "broken")
	must(t, exec.Command("cp", "-a", filepath.Join(src, "train"), broken).Run())
	for _, name := range []string{"cut.png", "text.jpg"} {
		must(t, os.WriteFile(filepath.Join(broken, "InvBoot", name), []byte("not an image"), 0o644))
	}
	ref := wait()
	test := filepath.Join(src, "test")
	for i, tc := range []struct {
		train   string
		extra   []string
		trains  bool     // reaches training (then killed)
		want    []string // in the output
		refused []string // in the output of a refusal
	}{
		{filepath.Join(src, "train"), nil, true, []string{"learning task 3: 2 new classes [InvBag InvBoot]", `...: hidden (name starts with "."), not read`}, nil},
		{bad, nil, false, nil, []string{"3 problems with class folders", `"new\nline"`, `" lead"`, `"Cl\xffass"`, "a class name is valid UTF-8"}},
		{broken, nil, false, nil, []string{"2 of 45 image files are unreadable", "cut.png", "text.jpg", "--skip-unreadable trains on the rest"}},
		{broken, []string{"--skip-unreadable"}, true, []string{"unreadable, left out", "cut.png", "text.jpg", "learning task 3"}, nil},
	} {
		run := copyRun(t, ref)
		args := append([]string{"learn", "--run", run, "--train", tc.train, "--test", test}, tc.extra...)
		p := startBicyc(t, args...)
		if tc.trains {
			if !p.waitFor("learning task 3", runTimeout) {
				t.Fatalf("case %d: learn did not start training:\n%s", i, p.Output())
			}
			p.kill()
		} else {
			select {
			case <-p.exited:
			case <-time.After(runTimeout):
				t.Fatalf("case %d: learn did not end", i)
			}
			if p.state.Success() {
				t.Errorf("case %d: learn succeeded, want a refusal:\n%s", i, p.Output())
			}
		}
		out := p.Output()
		for _, w := range append(tc.want, tc.refused...) {
			if !strings.Contains(out, w) {
				t.Errorf("case %d: output lacks %q:\n%s", i, w, out)
			}
		}
	}
}

// TestKilledLearnIsVisibleAndRepairable: issue 33, row 4. A learn killed
// with SIGKILL once its checkpoint is written, before its export, leaves
// the model one task behind: eval warns, learn again with the same folders
// names the repair instead of "class already exists", bicyc export --run
// repairs it and says so.
func TestKilledLearnIsVisibleAndRepairable(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST with the real bicyc binary")
	}
	wait := startReference(t)
	src := t.TempDir()
	for _, split := range []string{"train", "test"} {
		writeInverted(t, filepath.Join(src, split, "InvBag"), 8, 20)
	}
	run := copyRun(t, wait())
	trainDir, testDir := filepath.Join(src, "train"), filepath.Join(src, "test")
	p := startBicyc(t, "learn", "--run", run, "--train", trainDir, "--test", testDir)
	if !p.waitFor("task 3 done", runTimeout) {
		t.Fatalf("learn did not finish its task:\n%s", p.Output())
	}
	// Kill as soon as checkpoints/latest names task 3: the export starts
	// then, and takes far longer than this poll.
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if n, _, _ := rundir.LatestCompleted(run); n == 3 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if !p.kill() {
		t.Fatalf("learn ended before the kill:\n%s", p.Output())
	}
	behind, err := rundir.Check(run, filepath.Join(run, "model"))
	if err != nil || behind == nil || behind.ModelTasks != 2 || behind.RunTasks != 3 {
		t.Fatalf("after the kill: %+v, %v; want the model 2 tasks behind 3", behind, err)
	}
	out, ok := runBicycToEnd(t, runTimeout, "eval", "--run", run)
	if !ok || !strings.Contains(out, "warning: model directory") || !strings.Contains(out, "bicyc export --run") {
		t.Errorf("eval: success %v, want a warning naming the repair:\n%s", ok, out)
	}
	out, ok = runBicycToEnd(t, runTimeout, "learn", "--run", run, "--train", trainDir, "--test", testDir)
	if ok || !strings.Contains(out, "task 3 already learned the classes of") || !strings.Contains(out, "bicyc export --run "+run) || strings.Contains(out, "already exists") {
		t.Errorf("learn again: success %v, want the repair named, not a duplicate name:\n%s", ok, out)
	}
	out, ok = runBicycToEnd(t, runTimeout, "export", "--run", run)
	if !ok || !strings.Contains(out, "it held 2 tasks, its run 3: now up to date") {
		t.Errorf("export: success %v:\n%s", ok, out)
	}
	if behind, err := rundir.Check(run, filepath.Join(run, "model")); behind != nil || err != nil {
		t.Errorf("after export: %+v, %v; want up to date", behind, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
