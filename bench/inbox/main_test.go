package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bicyc/bicyc/internal/testmodel/small"
)

// TestMeasure runs the real server on the tests' small model with a
// threshold that answers every image unknown: the inbox then holds the
// whole stream, so the counts are known exactly, and every file in it must
// match an image sent by content hash.
func TestMeasure(t *testing.T) {
	model, test := small.Get(t)
	defer small.Cleanup()
	root := t.TempDir()
	bin := filepath.Join(root, "bicyc-infer")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/bicyc-infer").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	known, newDir := filepath.Join(root, "known"), filepath.Join(root, "new")
	for i := range 40 {
		dir := filepath.Join(known, fmt.Sprint(test.Labels[i]))
		if i >= 30 {
			dir = newDir
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		png := small.EncodePNG(t, small.FashionImage(test, i))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d.png", i)), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stream, err := drawStream(known, newDir, 20, 0.25, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := measure(bin, model, "127.0.0.1:18481", "nearest-distance", 1e-9, stream)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	if r.Known != 15 || r.New != 5 || r.AnsweredUnknown != 20 || r.Collected != 20 || r.CollectedNew != 5 ||
		r.Precision != 0.25 || r.Recall != 1 || r.KnownAccepted != 0 {
		t.Errorf("got %+v, want 15 known and 5 new sent, all 20 answered unknown and collected", r)
	}
	if _, err := drawStream(known, newDir, 20, 0.6, 1); err == nil {
		t.Error("12 new images asked of a folder of 10: no error")
	}
}
