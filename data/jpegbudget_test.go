package data

import (
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/internal/jpegbomb"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJPEGBudgetNamesFile: the training loaders refuse a scan bomb with an
// error naming the file.
func TestJPEGBudgetNamesFile(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "cat")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bomb := filepath.Join(dir, "bomb.jpg")
	if err := os.WriteFile(bomb, jpegbomb.Progressive(4096, 6000), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadImageFolder(root, imaging.Preprocess{Channels: 1, Height: 8, Width: 8})
	if err == nil || !strings.Contains(err.Error(), bomb) || !strings.Contains(err.Error(), "scans") {
		t.Errorf("LoadImageFolder: %v, want an error naming %s and its scans", err, bomb)
	}
	if errs := CheckImageFiles([]string{bomb}, imaging.MaxImagePixels); errs[0] == nil || !strings.Contains(errs[0].Error(), bomb) {
		t.Errorf("CheckImageFiles: %v, want an error naming %s", errs[0], bomb)
	}
}
