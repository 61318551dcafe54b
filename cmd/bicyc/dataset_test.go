package main

import (
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConvertDataset converts a two-image CUB-200 tree through the
// command and checks the message and the files; a missing --layout fails.
func TestConvertDataset(t *testing.T) {
	src := t.TempDir()
	for _, name := range []string{"001.A/a_1.png", "002.B/b_2.png"} {
		path := filepath.Join(src, "images", name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		png.Encode(f, image.NewGray(image.Rect(0, 0, 5, 4)))
		f.Close()
	}
	os.WriteFile(filepath.Join(src, "images.txt"), []byte("1 001.A/a_1.png\n2 002.B/b_2.png\n"), 0o644)
	os.WriteFile(filepath.Join(src, "train_test_split.txt"), []byte("1 1\n2 0\n"), 0o644)
	dst := filepath.Join(t.TempDir(), "cub")
	out, err := runCLI(t, "convert-dataset", "--layout", "cub200", src, dst)
	if err != nil || !strings.Contains(out, "1 training and 1 test images") {
		t.Fatalf("convert-dataset: %q %v", out, err)
	}
	for _, f := range []string{"train/001.A/a_1.png", "test/002.B/b_2.png"} {
		if _, err := os.Stat(filepath.Join(dst, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := runCLI(t, "convert-dataset", src, dst+"2"); err == nil || !strings.Contains(err.Error(), "layout") {
		t.Errorf("without --layout: %v", err)
	}
}
