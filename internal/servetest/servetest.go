// Package servetest holds the helpers that the tests of package serve and of
// the bicyc-infer command share to drive a model server over HTTP and to
// change a served model directory on disk. Only tests import it.
package servetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/infer"
)

// SyncBuffer is a bytes.Buffer safe for the server's goroutines to write
// while the test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// FlipByte inverts one byte in the middle of a file, keeping its size.
func FlipByte(t testing.TB, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// EditManifest rewrites dir/manifest.json through edit and seals it again
// (bundle.SealManifest), as a deliberate edit is made: a renamed class
// keeps the directory valid.
func EditManifest(t testing.TB, dir string, edit func(m map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, bundle.ManifestFile)
	var m map[string]any
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := bundle.SealManifest(dir); err != nil {
		t.Fatal(err)
	}
}

// RenameClasses gives every class of the manifest the name prefix+id.
func RenameClasses(prefix string) func(map[string]any) {
	return func(m map[string]any) {
		for _, c := range m["classes"].([]any) {
			class := c.(map[string]any)
			class["name"] = fmt.Sprintf("%s%v", prefix, class["id"])
		}
	}
}

// ClassifyPNG posts img as a PNG and returns the status and the decoded
// answer.
func ClassifyPNG(t testing.TB, url string, body []byte) (int, infer.Result) {
	t.Helper()
	resp, err := http.Post(url+"/v1/classify", "image/png", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res infer.Result
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		t.Fatalf("status %d: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, res
}

// PostReload posts /admin/reload and returns the status and the body.
func PostReload(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Post(url+"/admin/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// GetAny returns the status and body of a GET.
func GetAny(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// CopyDir copies the model directory src into a new temporary directory of
// t, so that a test can change it, and returns the copy.
func CopyDir(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "model")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}
