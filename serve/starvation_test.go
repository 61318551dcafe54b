package serve

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bicyc/bicyc/internal/servetest"
)

// rawRequest opens a connection to ts, writes head (request line and
// headers, without the blank line) and then body, and returns the
// connection for the test to read the answer from.
func rawRequest(t *testing.T, ts *httptest.Server, head string, body []byte) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, head+"\r\nHost: test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(body); err != nil {
		t.Fatal(err)
	}
	return conn
}

// readStatus reads the status code of the answer on conn, failing the test
// if none arrives within limit.
func readStatus(t *testing.T, conn net.Conn, limit time.Duration) (int, string, time.Duration) {
	t.Helper()
	start := time.Now()
	conn.SetReadDeadline(start.Add(limit))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", limit, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), time.Since(start)
}

// TestServerOversizeLength declares a 1e12-byte body and sends none: the
// answer is 413 at once (it used to be 400 after the 30 s read timeout). A
// chunked body without a declared length gets 413 once it passes the limit.
func TestServerOversizeLength(t *testing.T) {
	_, ts, _ := testServer(t, func(c *Config) { c.MaxBody = 64 << 10; c.BodyTimeout = 10 * time.Second })
	conn := rawRequest(t, ts, "POST /v1/classify HTTP/1.1\r\nContent-Type: image/png\r\nContent-Length: 1000000000000", nil)
	status, body, took := readStatus(t, conn, 5*time.Second)
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, "declares 1000000000000 bytes") || took > time.Second {
		t.Errorf("declared 1e12 bytes: %d %q after %v, want 413 at once", status, body, took)
	}
	chunked := io.MultiReader(bytes.NewReader(make([]byte, 100<<10))) // no length: sent chunked
	resp, err := http.Post(ts.URL+"/v1/classify", "image/png", chunked)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "request body too large") {
		t.Errorf("chunked 100 KiB: %d %s, want 413", resp.StatusCode, b)
	}
}

// TestServerStalledUploadsDoNotStarve opens twice as many stalled uploads
// as there are classification slots (headers and a few bytes of a declared
// 10 KB body, then nothing): valid requests are still answered at once,
// /readyz stays ready, and each stalled upload gets 408 once the body
// timeout passes. Before, the stalled uploads held every slot for the 30 s
// read timeout and valid requests got 503.
func TestServerStalledUploadsDoNotStarve(t *testing.T) {
	const bodyTimeout = 1500 * time.Millisecond
	_, ts, _ := testServer(t, func(c *Config) {
		c.MaxConcurrent = 2
		c.BodyTimeout = bodyTimeout
		c.QueueTimeout = 200 * time.Millisecond
	})
	_, test := testModel(t)
	var stalled []net.Conn
	for range 4 {
		stalled = append(stalled, rawRequest(t, ts, "POST /v1/classify HTTP/1.1\r\nContent-Type: image/png\r\nContent-Length: 10000", []byte("\x89PNG\r\n")))
	}
	time.Sleep(100 * time.Millisecond) // the uploads are being read
	good := encodePNG(t, fashionImage(test, 0))
	for i := range 5 {
		start := time.Now()
		status, msg := post(t, ts.URL, "image/png", good)
		if status != http.StatusOK || time.Since(start) > bodyTimeout/2 {
			t.Errorf("valid request %d beside stalled uploads: %d %q after %v", i, status, msg, time.Since(start))
		}
	}
	if body := get(t, ts.URL+"/readyz"); body != "ready\n" {
		t.Errorf("/readyz %q with only stalled uploads", body)
	}
	for i, conn := range stalled {
		status, body, _ := readStatus(t, conn, 3*bodyTimeout)
		if status != http.StatusRequestTimeout || !strings.Contains(body, "not received in time") {
			t.Errorf("stalled upload %d: %d %q, want 408", i, status, body)
		}
	}
}

// TestServerReadiness checks that /readyz answers 503 while requests wait
// for a classification slot and while the memory for bodies is full, and
// that a request finding that memory full gets 503.
func TestServerReadiness(t *testing.T) {
	s, ts, _ := testServer(t, func(c *Config) { c.MaxConcurrent = 1; c.QueueTimeout = 5 * time.Second })
	_, test := testModel(t)
	s.slots <- struct{}{}
	var wg sync.WaitGroup
	wg.Go(func() {
		if status, msg := post(t, ts.URL, "image/png", encodePNG(t, fashionImage(test, 0))); status != http.StatusOK {
			t.Errorf("queued request: %d %q", status, msg)
		}
	})
	for s.waiting.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if status, body := servetest.GetAny(t, ts.URL+"/readyz"); status != http.StatusServiceUnavailable || !strings.Contains(body, "saturated: all 1 classification slots busy, 1 requests waiting") {
		t.Errorf("/readyz with a request waiting: %d %q", status, body)
	}
	<-s.slots
	wg.Wait()
	if status, body := servetest.GetAny(t, ts.URL+"/readyz"); status != http.StatusOK {
		t.Errorf("/readyz once the queue drained: %d %q", status, body)
	}
	_, limit := s.bodies.load()
	s.bodies.take(limit - 1000)
	if status, body := servetest.GetAny(t, ts.URL+"/readyz"); status != http.StatusServiceUnavailable || !strings.Contains(body, "saturated: request bodies hold") {
		t.Errorf("/readyz with body memory full: %d %q", status, body)
	}
	if status, msg := post(t, ts.URL, "image/png", encodePNG(t, fashionImage(test, 1))); status != http.StatusServiceUnavailable || !strings.Contains(msg, "memory for request bodies is full") {
		t.Errorf("request with body memory full: %d %q", status, msg)
	}
	s.bodies.give(limit - 1000)
	if used, _ := s.bodies.load(); used != 0 {
		t.Errorf("%d bytes of body memory still held after every request ended", used)
	}
}

// TestAdminOffPublicListener checks that POST /admin/reload is not served
// by the public handler, only by the admin one.
func TestAdminOffPublicListener(t *testing.T) {
	s, ts, _ := testServer(t, nil)
	resp, err := http.Post(ts.URL+"/admin/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /admin/reload on the public listener: %d, want 404", resp.StatusCode)
	}
	admin := httptest.NewServer(s.Admin)
	defer admin.Close()
	if status, body := servetest.PostReload(t, admin.URL); status != http.StatusOK {
		t.Errorf("POST /admin/reload on the admin listener: %d %s", status, body)
	}
}
