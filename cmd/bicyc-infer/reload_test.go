package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/servetest"
)

// copyModel copies the test model directory so a test can change it.
func copyModel(t *testing.T) string {
	src, _ := testModel(t)
	return servetest.CopyDir(t, src)
}

// TestServeReloadsOnSIGHUP runs the serve command's runServe on a loopback
// port and sends this process SIGHUP, which runServe catches: first with
// model.onnx damaged on disk (the reload fails, the log says why, the old
// model serves on), then with a valid change (classes renamed), which is
// served from then on.
func TestServeReloadsOnSIGHUP(t *testing.T) {
	dir := copyModel(t)
	_, test := testModel(t)
	var log servetest.SyncBuffer
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
	_, want := servetest.ClassifyPNG(t, url, img)

	servetest.FlipByte(t, filepath.Join(dir, bundle.ModelFile))
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, &log, func(s string) bool { return strings.Contains(s, "reload of "+dir+" failed") })
	if !strings.Contains(log.String(), "model.onnx: model file checksum mismatch") {
		t.Errorf("the log does not name the damaged file:\n%s", log.String())
	}
	if status, got := servetest.ClassifyPNG(t, url, img); status != http.StatusOK || !equalResults(got, want) {
		t.Errorf("after the failed reload: %d %+v, want %+v", status, got, want)
	}
	if _, body := servetest.GetAny(t, url+"/readyz"); !strings.Contains(body, "model.onnx: model file checksum mismatch") {
		t.Errorf("/readyz %q does not say why the reload failed", body)
	}

	servetest.FlipByte(t, filepath.Join(dir, bundle.ModelFile))
	servetest.EditManifest(t, dir, servetest.RenameClasses("hup-"))
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, &log, func(s string) bool { return strings.Contains(s, "reloaded "+dir) })
	if _, got := servetest.ClassifyPNG(t, url, img); got.Predictions[0].Name != fmt.Sprintf("hup-%d", want.Predictions[0].ClassID) {
		t.Errorf("after SIGHUP: %+v, want the renamed classes", got)
	}
}

// waitLog polls the log until done accepts it, for at most 30 s.
func waitLog(t *testing.T, log *servetest.SyncBuffer, done func(string) bool) {
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
	status, body := servetest.GetAny(t, url)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, status, body)
	}
	return body
}
