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
	first, err := c.Save(pngs[0], "png")
	if err != nil || filepath.Ext(first) != ".png" {
		t.Fatalf("save: %q, %v", first, err)
	}
	if again, err := c.Save(pngs[0], "png"); err != nil || again != first {
		t.Fatalf("same image again: %q, %v; want %q", again, err, first)
	}
	if _, err := c.Save(pngs[1], "png"); err != nil {
		t.Fatal(err)
	}
	// A new Collector on the same directory counts the two files.
	c, err = NewCollector(dir, 3, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Save(pngs[2], "png"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Save(pngs[3], "png"); !errors.Is(err, ErrCollectionFull) {
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
	if _, err := small.Save(pngs[0], "png"); err != nil {
		t.Fatal(err)
	}
	if _, err := small.Save(pngs[1], "png"); !errors.Is(err, ErrCollectionFull) {
		t.Fatalf("past the byte limit: %v, want ErrCollectionFull", err)
	}
	if _, err := NewCollector(dir, 0, 1); err == nil {
		t.Fatal("a limit of 0 files accepted")
	}
}
