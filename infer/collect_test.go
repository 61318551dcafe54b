package infer

import (
	"bytes"
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// TestCollectorBounds saves real PNG files until each limit, counting what
// the directory held before, and never saves the same image twice.
func TestCollectorBounds(t *testing.T) {
	f := loadFixture(t)
	var pngs [][]byte
	for i := range 4 {
		var buf bytes.Buffer
		if err := png.Encode(&buf, fashionImage(f.test, i)); err != nil {
			t.Fatal(err)
		}
		pngs = append(pngs, buf.Bytes())
	}
	dir := filepath.Join(t.TempDir(), "unknown")
	c, err := NewCollector(dir, 3, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	first, written, err := c.Save(pngs[0], "png")
	if err != nil || filepath.Ext(first) != ".png" || !written {
		t.Fatalf("save: %q, %v, %v", first, written, err)
	}
	if again, written, err := c.Save(pngs[0], "png"); err != nil || again != first || written {
		t.Fatalf("same image again: %q, written %v, %v; want %q not written", again, written, err, first)
	}
	if _, _, err := c.Save(pngs[1], "png"); err != nil {
		t.Fatal(err)
	}
	// A new Collector on the same directory counts the two files.
	c, err = NewCollector(dir, 3, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Save(pngs[2], "png"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Save(pngs[3], "png"); !errors.Is(err, ErrCollectionFull) {
		t.Fatalf("fourth file: %v, want ErrCollectionFull", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Fatalf("%d files collected, want 3", len(entries))
	}
	saved, err := os.ReadFile(first)
	if err != nil || !bytes.Equal(saved, pngs[0]) {
		t.Fatalf("collected file differs from the image: %v", err)
	}
	small, err := NewCollector(filepath.Join(t.TempDir(), "small"), 10, int64(len(pngs[0])))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := small.Save(pngs[0], "png"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := small.Save(pngs[1], "png"); !errors.Is(err, ErrCollectionFull) {
		t.Fatalf("past the byte limit: %v, want ErrCollectionFull", err)
	}
	if _, err := NewCollector(dir, 0, 1); err == nil {
		t.Fatal("a limit of 0 files accepted")
	}
}

// TestCollectorCountsTheFolderNow: a full collection resumes once files are
// moved out, and files another process writes count, without a new
// Collector (issue 33, row 3).
func TestCollectorCountsTheFolderNow(t *testing.T) {
	dir := t.TempDir()
	c, err := NewCollector(dir, 3, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	img := func(i int) []byte { return []byte{byte(i), 1, 2, 3} }
	var paths []string
	for i := range 3 {
		p, written, err := c.Save(img(i), "png")
		if err != nil || !written {
			t.Fatalf("save %d: %v %v", i, written, err)
		}
		paths = append(paths, p)
	}
	if _, _, err := c.Save(img(3), "png"); !errors.Is(err, ErrCollectionFull) {
		t.Fatalf("fourth: %v, want full", err)
	}
	if err := os.Rename(paths[0], filepath.Join(t.TempDir(), "moved.png")); err != nil {
		t.Fatal(err)
	}
	if _, written, err := c.Save(img(3), "png"); err != nil || !written {
		t.Fatalf("after moving one out: %v %v, want saved", written, err)
	}
	// Another writer fills the folder past this Collector's count.
	if err := os.Remove(paths[1]); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "other.png"), img(9), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Save(img(4), "png"); !errors.Is(err, ErrCollectionFull) {
		t.Fatalf("with another writer's file: %v, want full", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("%d files, want the limit of 3", len(entries))
	}
}
