package bounded

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReader(t *testing.T) {
	cases := []struct {
		size, limit int
		tooLarge    bool
	}{{0, 0, false}, {1, 0, true}, {10, 10, false}, {11, 10, true}, {100000, 65536, true}, {65536, 65536, false}}
	for i, c := range cases {
		r := NewReader(bytes.NewReader(make([]byte, c.size)), int64(c.limit))
		got, err := io.ReadAll(r)
		if c.tooLarge != errors.Is(err, ErrTooLarge) || c.tooLarge != r.Exceeded {
			t.Errorf("case %d: %d bytes, limit %d: error %v, exceeded %v", i, c.size, c.limit, err, r.Exceeded)
		}
		if len(got) > c.limit {
			t.Errorf("case %d: read %d bytes past the limit %d", i, len(got), c.limit)
		}
		if !c.tooLarge && len(got) != c.size {
			t.Errorf("case %d: read %d of %d bytes", i, len(got), c.size)
		}
	}
}

// TestReaderEndlessDevice reads /dev/zero, which never ends, under a limit.
func TestReaderEndlessDevice(t *testing.T) {
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Skip(err) // not a Unix system
	}
	defer f.Close()
	n, err := io.Copy(io.Discard, NewReader(f, 1<<20))
	if !errors.Is(err, ErrTooLarge) || n != 1<<20 {
		t.Fatalf("read %d bytes of /dev/zero, error %v; want 1 MiB then ErrTooLarge", n, err)
	}
}

// TestOpenRegularSpecialFiles checks that a named pipe without a writer, a
// device, a socket and a directory are refused at once, naming their kind,
// and a symbolic link to a regular file is followed.
func TestOpenRegularSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.png")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	sock := filepath.Join(dir, "socket.png")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	regular := filepath.Join(dir, "image.png")
	if err := os.WriteFile(regular, []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.png")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ path, kind string }{
		{fifo, "named pipe"}, {"/dev/null", "device"}, {sock, "socket"}, {dir, "directory"}, {link, ""}, {regular, ""},
	}
	for i, c := range cases {
		done := make(chan error, 1)
		go func() {
			f, _, err := OpenRegular(c.path)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if c.kind == "" && err != nil {
				t.Errorf("case %d %s: %v", i, c.path, err)
			}
			if c.kind != "" && (!errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), c.kind) || !strings.Contains(err.Error(), c.path)) {
				t.Errorf("case %d %s: error %v, want ErrNotRegular naming the path and %q", i, c.path, err, c.kind)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("case %d: OpenRegular(%s) hangs", i, c.path)
		}
	}
}

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(path, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("limit 10: %q, %v", b, err)
	}
	if _, err := ReadFile(path, 9); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), path) {
		t.Errorf("limit 9: %v, want ErrTooLarge naming the file", err)
	}
}
