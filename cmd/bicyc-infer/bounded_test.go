package main

import (
	"bytes"
	"image"
	"image/color/palette"
	"image/gif"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bicyc/bicyc/internal/jpegbomb"
)

// runWithin runs bicyc-infer like runCommand and fails the test if it does
// not finish within 20 s.
func runWithin(t *testing.T, stdin []byte, args ...string) (string, string, error) {
	t.Helper()
	type outcome struct {
		stdout, stderr string
		err            error
	}
	done := make(chan outcome, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		cmd := newRootCmd(bytes.NewReader(stdin), &stdout, &stderr)
		cmd.SetArgs(args)
		err := cmd.Execute()
		done <- outcome{stdout.String(), stderr.String(), err}
	}()
	select {
	case o := <-done:
		return o.stdout, o.stderr, o.err
	case <-time.After(20 * time.Second):
		t.Fatalf("bicyc-infer %s hangs", strings.Join(args, " "))
		return "", "", nil
	}
}

// TestClassifySkipsSpecialFiles puts a named pipe without a writer and a
// link to /dev/zero, both named like images, into a directory of real
// images: the run never blocks, classifies the images, and says on stderr
// which entries it skipped and why.
func TestClassifySkipsSpecialFiles(t *testing.T) {
	model, _ := testModel(t)
	dir, _ := imageTree(t)
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.png"), 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "sub", "zero.jpg")); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runWithin(t, nil, "--model", model, "--provider", "cpu", "--json", dir)
	if err == nil || err.Error() != "1 of 3 images failed" { // corrupt.png
		t.Errorf("error %v, want 1 of 3 images failed", err)
	}
	for _, want := range []string{
		"skipping " + filepath.Join(dir, "pipe.png") + ": not a regular file (named pipe)",
		"skipping " + filepath.Join(dir, "sub", "zero.jpg") + ": not a regular file (device)",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}
	if n := strings.Count(stdout, `"predictions"`); n != 2 {
		t.Errorf("%d images classified, want a.png and sub/b.jpg:\n%s", n, stdout)
	}
}

// TestClassifyEndlessInputs names /dev/zero and pipes 200 MB of zeros to
// standard input: each fails as an unknown format at once, after reading
// a few kilobytes, instead of reading everything into memory first.
func TestClassifyEndlessInputs(t *testing.T) {
	model, _ := testModel(t)
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip(err)
	}
	zeros := make([]byte, 200<<20)
	stdin := bytes.NewReader(zeros)
	_, stderr, err := runWithin(t, nil, "--model", model, "--provider", "cpu", "/dev/zero")
	if err == nil || !strings.Contains(stderr, "/dev/zero: unknown image format") {
		t.Errorf("/dev/zero: %v, stderr %q", err, stderr)
	}
	var out, errOut bytes.Buffer
	cmd := newRootCmd(stdin, &out, &errOut)
	cmd.SetArgs([]string{"--model", model, "--provider", "cpu", "-"})
	if err := cmd.Execute(); err == nil || !strings.Contains(errOut.String(), "-: unknown image format") {
		t.Errorf("200 MB of zeros on stdin: %v, stderr %q", err, errOut.String())
	}
	if read := int64(len(zeros)) - int64(stdin.Len()); read > 64<<10 {
		t.Errorf("read %d bytes of standard input to refuse it", read)
	}
}

// TestCollectKeepsBytesRead classifies, with every answer unknown
// (--threshold 1e-9) and --collect-unknown, a PNG on standard input and a
// two-frame GIF file, whose decoder stops after the first frame (the
// model's own preprocessing scales it to 28x28): each
// collected file holds exactly the bytes that came in, standard input read
// once.
func TestCollectKeepsBytesRead(t *testing.T) {
	model, test := testModel(t)
	dir := t.TempDir()
	// Noise frames of 128x128 compress badly: the second frame lies well
	// past what the decoder reads ahead.
	frames := make([]*image.Paletted, 2)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range frames {
		frames[i] = image.NewPaletted(image.Rect(0, 0, 128, 128), palette.Plan9)
		for p := range frames[i].Pix {
			frames[i].Pix[p] = uint8(rng.IntN(256))
		}
	}
	var anim bytes.Buffer
	if err := gif.EncodeAll(&anim, &gif.GIF{Image: frames, Delay: []int{10, 10}}); err != nil {
		t.Fatal(err)
	}
	animPath := filepath.Join(dir, "anim.gif")
	if err := os.WriteFile(animPath, anim.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	stdin := encodePNG(t, fashionImage(test, 2))
	collected := filepath.Join(dir, "unknown")
	stdout, stderr, err := runWithin(t, stdin, "--model", model, "--provider", "cpu", "--json", "--threshold", "1e-9",
		"--collect-unknown", collected, "-", animPath)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	want := map[string][]byte{"-": stdin, animPath: anim.Bytes()}
	for _, r := range jsonRecords(t, stdout) {
		got, err := os.ReadFile(r.Collected)
		if !r.Unknown || err != nil || !bytes.Equal(got, want[r.File]) {
			t.Errorf("%s: unknown %v, collected %q (%d bytes, %v), want the %d bytes given", r.File, r.Unknown, r.Collected, len(got), err, len(want[r.File]))
		}
		delete(want, r.File)
	}
	if len(want) > 0 {
		t.Errorf("no record for %v:\n%s", want, stdout)
	}
}

// TestClassifyScanBomb: a progressive JPEG of 6000 repeated scans among
// valid images fails at once with an error naming the file and its scans;
// the other images are classified.
func TestClassifyScanBomb(t *testing.T) {
	model, _ := testModel(t)
	dir, _ := imageTree(t)
	bomb := filepath.Join(dir, "bomb.jpg")
	if err := os.WriteFile(bomb, jpegbomb.Progressive(4096, 6000), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	stdout, stderr, err := runWithin(t, nil, "--model", model, "--provider", "cpu", dir)
	took := time.Since(start)
	if err == nil || err.Error() != "2 of 4 images failed" { // corrupt.png and the bomb
		t.Errorf("error %v, want 2 of 4 images failed", err)
	}
	if want := bomb + ": jpeg has 6001 scans, more than the limit of 100"; !strings.Contains(stderr, want) {
		t.Errorf("stderr %q lacks %q", stderr, want)
	}
	if n := strings.Count(stdout, "Pullover"); n != 2 {
		t.Errorf("%d images classified, want 2:\n%s", n, stdout)
	}
	t.Logf("run of 4 images, the bomb among them, in %v", took)
}
