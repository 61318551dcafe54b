package data

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bicyc/bicyc/bounded"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/internal/imagetest"
)

// specialFiles makes, in dir, a named pipe without a writer, a socket, and
// links to the pipe and to a regular image, all with image names; it
// returns the regular image's path and a function that releases the
// socket.
func specialFiles(t *testing.T, dir string) string {
	t.Helper()
	regular := filepath.Join(dir, "a.png")
	imagetest.WritePNG(t, regular, imagetest.Gradient(5, 4, 1))
	if err := syscall.Mkfifo(filepath.Join(dir, "b.png"), 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	if err := os.Symlink("b.png", filepath.Join(dir, "c.png")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.png", filepath.Join(dir, "d.png")); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "e.png"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return regular
}

// withTimeout fails the test if f does not return within 10 s.
func withTimeout(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s hangs", what)
	}
}

// TestImageFolderSkipsSpecialFiles loads an image folder whose class holds,
// besides two images (a file and a link to it), a named pipe, a link to it
// and a socket: loading never blocks, takes the two images and lists the
// other three in Skipped, each with its kind.
func TestImageFolderSkipsSpecialFiles(t *testing.T) {
	root := t.TempDir()
	class := filepath.Join(root, "shirt")
	if err := os.Mkdir(class, 0o755); err != nil {
		t.Fatal(err)
	}
	regular := specialFiles(t, class)
	var ds *Dataset
	var err error
	withTimeout(t, "LoadImageFolder", func() {
		ds, err = LoadImageFolder(root, imaging.Preprocess{Channels: 3, Height: 4, Width: 5})
	})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != 2 || !bytes.Equal(ds.Image(0), ds.Image(1)) {
		t.Errorf("%d images, want a.png and its link d.png", ds.Len())
	}
	want := []string{"b.png: not a regular file (named pipe)", "c.png: not a regular file (named pipe)", "e.png: not a regular file (socket)"}
	if len(ds.Skipped) != len(want) {
		t.Fatalf("skipped %q, want %q", ds.Skipped, want)
	}
	for i, w := range want {
		if !strings.HasSuffix(ds.Skipped[i], filepath.Join("shirt", w)) {
			t.Errorf("skipped[%d] = %q, want it to end in %q", i, ds.Skipped[i], w)
		}
	}
	withTimeout(t, "DecodeImageFile on a named pipe", func() {
		_, err = imaging.DecodeImageFile(filepath.Join(class, "b.png"))
	})
	if !errors.Is(err, bounded.ErrNotRegular) {
		t.Errorf("DecodeImageFile of a named pipe: %v, want ErrNotRegular", err)
	}
	files, _, _ := ImageFiles(class)
	if !slices.Equal(files, []string{regular, filepath.Join(class, "d.png")}) {
		t.Errorf("ImageFiles: %q", files)
	}
}
