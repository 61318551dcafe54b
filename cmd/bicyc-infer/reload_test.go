package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/infer"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines to write
// while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// copyModel copies the test model directory so a test can change it.
func copyModel(t *testing.T) string {
	t.Helper()
	src, _ := testModel(t)
	dst := filepath.Join(t.TempDir(), "model")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// flipByte inverts one byte in the middle of a file, keeping its size.
func flipByte(t *testing.T, path string) {
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

// editManifest rewrites dir/manifest.json through edit and seals it again
// (bundle.SealManifest), as a deliberate edit is made: a renamed class
// keeps the directory valid.
func editManifest(t *testing.T, dir string, edit func(m map[string]any)) {
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

// renameClasses gives every class of the manifest the name prefix+id.
func renameClasses(prefix string) func(map[string]any) {
	return func(m map[string]any) {
		for _, c := range m["classes"].([]any) {
			class := c.(map[string]any)
			class["name"] = fmt.Sprintf("%s%v", prefix, class["id"])
		}
	}
}

// classifyPNG posts img as a PNG and returns the status and the decoded
// answer.
func classifyPNG(t *testing.T, url string, body []byte) (int, infer.Result) {
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

// postReload posts /admin/reload and returns the status and the body.
func postReload(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Post(url+"/admin/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// getAny returns the status and body of a GET.
func getAny(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeReloadsOnSIGHUP runs the serve command's runServe on a loopback
// port and sends this process SIGHUP, which runServe catches: first with
// model.onnx damaged on disk (the reload fails, the log says why, the old
// model serves on), then with a valid change (classes renamed), which is
// served from then on.
func TestServeReloadsOnSIGHUP(t *testing.T) {
	dir := copyModel(t)
	_, test := testModel(t)
	var log syncBuffer
	o := &serveOptions{model: &modelOptions{model: dir, provider: "cpu", threads: 1, maxPixels: infer.DefaultMaxPixels},
		addr: "127.0.0.1:0", maxBody: 1 << 20, maxBuffered: 4 << 20, maxConcurrent: 2, queueTimeout: time.Second, bodyTimeout: 5 * time.Second,
		readTimeout: 10 * time.Second, writeTimeout: 10 * time.Second, shutdownTimeout: 5 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- runServe(ctx, o, &log) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("runServe: %v", err)
		}
	}()
	addr := regexp.MustCompile(` on (127\.0\.0\.1:\d+)\n`)
	url := ""
	waitLog(t, &log, func(s string) bool {
		if m := addr.FindStringSubmatch(s); m != nil {
			url = "http://" + m[1]
			return true
		}
		return false
	})
	img := encodePNG(t, fashionImage(test, 3))
	_, want := classifyPNG(t, url, img)

	flipByte(t, filepath.Join(dir, bundle.ModelFile))
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, &log, func(s string) bool { return strings.Contains(s, "reload of "+dir+" failed") })
	if !strings.Contains(log.String(), "model.onnx: model file checksum mismatch") {
		t.Errorf("the log does not name the damaged file:\n%s", log.String())
	}
	if status, got := classifyPNG(t, url, img); status != http.StatusOK || !equalResults(got, want) {
		t.Errorf("after the failed reload: %d %+v, want %+v", status, got, want)
	}
	if _, body := getAny(t, url+"/readyz"); !strings.Contains(body, "model.onnx: model file checksum mismatch") {
		t.Errorf("/readyz %q does not say why the reload failed", body)
	}

	flipByte(t, filepath.Join(dir, bundle.ModelFile))
	editManifest(t, dir, renameClasses("hup-"))
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, &log, func(s string) bool { return strings.Contains(s, "reloaded "+dir) })
	if _, got := classifyPNG(t, url, img); got.Predictions[0].Name != fmt.Sprintf("hup-%d", want.Predictions[0].ClassID) {
		t.Errorf("after SIGHUP: %+v, want the renamed classes", got)
	}
}

// waitLog polls the log until done accepts it, for at most 30 s.
func waitLog(t *testing.T, log *syncBuffer, done func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !done(log.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out; log:\n%s", log.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// get returns the body of a GET that must answer 200.
func get(t *testing.T, url string) string {
	t.Helper()
	status, body := getAny(t, url)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, status, body)
	}
	return body
}
