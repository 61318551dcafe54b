package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/servetest"
)

// testServer serves the test model on a loopback listener; it returns the
// server, its listener and a classifier of the same model for reference.
func testServer(t *testing.T, tweak func(*Config)) (*Server, *httptest.Server, *infer.Classifier) {
	t.Helper()
	model, _ := testModel(t)
	c := openReference(t, model)
	cfg := testConfig(model)
	if tweak != nil {
		tweak(&cfg)
	}
	s := newTestServer(t, cfg)
	ts := httptest.NewServer(s.Public)
	t.Cleanup(ts.Close)
	return s, ts, c
}

// post sends body to /v1/classify and returns the status and the JSON
// answer's "error" field.
func post(t *testing.T, url, contentType string, body []byte) (int, string) {
	t.Helper()
	resp, err := http.Post(url+"/v1/classify", contentType, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Error string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("status %d, body not JSON: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, out.Error
}

func multipartBody(t *testing.T, field string, content []byte) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if err := w.WriteField("note", "ignored"); err != nil {
		t.Fatal(err)
	}
	part, err := w.CreateFormFile(field, "image.png")
	if err != nil {
		t.Fatal(err)
	}
	part.Write(content)
	w.Close()
	return w.FormDataContentType(), b.Bytes()
}

// TestServerConcurrentRequests posts real images from many goroutines, as
// raw bodies and as multipart forms, and checks every answer against
// Classify, then the request counter in /metrics.
func TestServerConcurrentRequests(t *testing.T) {
	_, ts, c := testServer(t, nil)
	_, test := testModel(t)
	const n = 24
	bodies := make([][]byte, n)
	want := make([]infer.Result, n)
	for i := range n {
		img := fashionImage(test, 200+i)
		bodies[i] = encodePNG(t, img)
		var err error
		if want[i], err = c.Classify(context.Background(), img); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			contentType, body := "image/png", bodies[i]
			if i%2 == 1 {
				contentType, body = multipartBody(t, "image", bodies[i])
			}
			resp, err := http.Post(ts.URL+"/v1/classify", contentType, bytes.NewReader(body))
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			var got infer.Result
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
				errs[i] = fmt.Errorf("status %d, %v", resp.StatusCode, err)
				return
			}
			if len(got.Predictions) != len(want[i].Predictions) {
				errs[i] = fmt.Errorf("%d predictions, want %d", len(got.Predictions), len(want[i].Predictions))
				return
			}
			for r, p := range got.Predictions {
				q := want[i].Predictions[r]
				if p.ClassID != q.ClassID || p.Name != q.Name || p.Task != q.Task || math.Abs(float64(p.Distance-q.Distance)) > 1e-6 {
					errs[i] = fmt.Errorf("rank %d: %+v, want %+v", r, p, q)
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	metrics := get(t, ts.URL+"/metrics")
	for _, want := range []string{
		fmt.Sprintf(`bicyc_infer_http_requests_total{code="200",handler="classify",method="post"} %d`, n),
		fmt.Sprintf(`bicyc_infer_http_request_duration_seconds_count{code="200",handler="classify",method="post"} %d`, n),
		"bicyc_infer_http_requests_in_flight",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
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

// pngHeader returns a PNG signature and an IHDR chunk declaring w x h.
func pngHeader(w, h uint32) []byte {
	var ihdr bytes.Buffer
	ihdr.WriteString("IHDR")
	for _, v := range []uint32{w, h} {
		ihdr.Write([]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	ihdr.Write([]byte{8, 2, 0, 0, 0})
	crc := crc32.ChecksumIEEE(ihdr.Bytes())
	out := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0d")
	out = append(out, ihdr.Bytes()...)
	return append(out, byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc))
}

func TestServerErrors(t *testing.T) {
	_, ts, _ := testServer(t, func(c *Config) { c.MaxBody = 64 << 10 })
	_, test := testModel(t)
	good := encodePNG(t, fashionImage(test, 0))
	noImage, noImageBody := multipartBody(t, "file", good)
	cases := []struct {
		contentType string
		body        []byte
		status      int
		errorHas    string
	}{
		{"image/png", nil, http.StatusBadRequest, "empty image data"},
		{"application/octet-stream", []byte("hello, world"), http.StatusUnsupportedMediaType, "unknown image format"},
		{"", []byte("hello, world"), http.StatusUnsupportedMediaType, "unknown image format"},
		{"text/plain", good, http.StatusUnsupportedMediaType, "content type text/plain: unsupported content type"},
		{"application/json", good, http.StatusUnsupportedMediaType, "unsupported content type"},
		{"image/png; charset", good, http.StatusUnsupportedMediaType, "unsupported content type"},
		{"image/png", good[:len(good)/2], http.StatusBadRequest, "truncated or corrupt png image"},
		{"image/png", pngHeader(100000, 100000), http.StatusRequestEntityTooLarge, "100000x100000"},
		{"image/png", bytes.Repeat([]byte{0}, 65<<10), http.StatusRequestEntityTooLarge, "request body declares 66560 bytes, more than the limit of 65536"},
		{noImage, noImageBody, http.StatusBadRequest, `no multipart field named "image"`},
		{"multipart/form-data", good, http.StatusBadRequest, "without a boundary"},
	}
	for i, c := range cases {
		status, msg := post(t, ts.URL, c.contentType, c.body)
		if status != c.status || !strings.Contains(msg, c.errorHas) {
			t.Errorf("case %d: %d %q, want %d mentioning %q", i, status, msg, c.status, c.errorHas)
		}
	}
	resp, err := http.Get(ts.URL + "/v1/classify")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/classify: %d, want 405", resp.StatusCode)
	}
	metrics := get(t, ts.URL+"/metrics")
	for _, code := range []int{400, 413, 415} {
		if !strings.Contains(metrics, fmt.Sprintf(`bicyc_infer_http_requests_total{code="%d",handler="classify",method="post"}`, code)) {
			t.Errorf("/metrics does not count code %d", code)
		}
	}
}

// TestServerBusy takes every classification slot and checks that a
// request waits queueTimeout and then gets 503.
func TestServerBusy(t *testing.T) {
	s, ts, _ := testServer(t, func(c *Config) { c.MaxConcurrent = 2; c.QueueTimeout = 20 * time.Millisecond })
	_, test := testModel(t)
	for range cap(s.slots) {
		s.slots <- struct{}{}
	}
	status, msg := post(t, ts.URL, "image/png", encodePNG(t, fashionImage(test, 0)))
	if status != http.StatusServiceUnavailable || !strings.Contains(msg, "busy") {
		t.Errorf("%d %q, want 503 busy", status, msg)
	}
	<-s.slots
	if status, msg := post(t, ts.URL, "image/png", encodePNG(t, fashionImage(test, 0))); status != http.StatusOK {
		t.Errorf("with a free slot: %d %q", status, msg)
	}
}

// TestServeGracefulShutdown serves on a real loopback listener, cancels the
// context as SIGTERM would, and checks that a request in flight completes,
// readiness drops and serve returns cleanly.
func TestServeGracefulShutdown(t *testing.T) {
	model, test := testModel(t)
	cfg := testConfig(model)
	cfg.MaxConcurrent, cfg.QueueTimeout = 1, 5*time.Second
	s := newTestServer(t, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, Listeners{Public: ln}, testTimeouts, nil) }()

	if got := get(t, url+"/healthz"); got != "ok\n" {
		t.Errorf("healthz %q", got)
	}
	if got := get(t, url+"/readyz"); got != "ready\n" {
		t.Errorf("readyz %q", got)
	}
	// Hold the only slot so the next request is in flight, waiting, when
	// shutdown starts; release it once shutdown is under way.
	s.slots <- struct{}{}
	inFlight := make(chan int, 1)
	go func() {
		resp, err := http.Post(url+"/v1/classify", "image/png", bytes.NewReader(encodePNG(t, fashionImage(test, 0))))
		if err != nil {
			inFlight <- -1
			return
		}
		resp.Body.Close()
		inFlight <- resp.StatusCode
	}()
	// The request is in flight once the handler counts it.
	for !strings.Contains(get(t, url+"/metrics"), "bicyc_infer_http_requests_in_flight 1") {
		time.Sleep(time.Millisecond)
	}
	cancel()
	for s.ready.Load() {
		time.Sleep(time.Millisecond)
	}
	<-s.slots
	if code := <-inFlight; code != http.StatusOK {
		t.Errorf("request in flight during shutdown: status %d, want 200", code)
	}
	if err := <-served; err != nil {
		t.Errorf("serve returned %v", err)
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Error("server still answers after shutdown")
	}
}

// FuzzClassifyHandler checks that no request body makes the handler panic
// or answer 500: every bad body is the client's fault (4xx).
func FuzzClassifyHandler(f *testing.F) {
	f.Add([]byte{}, "image/png")
	f.Add([]byte("\x89PNG\r\n\x1a\n"), "image/png")
	f.Add(pngHeader(1, 1), "application/octet-stream")
	f.Add([]byte("--x\r\nContent-Disposition: form-data; name=\"image\"\r\n\r\nGIF89a\r\n--x--\r\n"), "multipart/form-data; boundary=x")
	f.Add([]byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"), "image/gif")
	model, _ := testModel(f)
	cfg := testConfig(model)
	cfg.MaxPixels, cfg.MaxBody, cfg.MaxConcurrent = 1<<16, 1<<16, 2
	s := newTestServer(f, cfg)
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		req := httptest.NewRequest(http.MethodPost, "/v1/classify", bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		s.Public.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && (rec.Code < 400 || rec.Code > 499) {
			t.Errorf("status %d: %s", rec.Code, rec.Body)
		}
	})
}

// blockingModel is a model whose runs (ClassifyInputs) wait for their
// context to end, as a long run does when its client goes away.
type blockingModel struct {
	model
	started chan struct{}
}

func (m blockingModel) ClassifyInputs(ctx context.Context, inputs []infer.Input) ([]infer.Result, error) {
	m.started <- struct{}{}
	<-ctx.Done()
	return nil, fmt.Errorf("classify: %w", ctx.Err())
}

// TestClientGoneCancelsClassification checks that the request's context
// reaches the model: when the client goes away mid-classification, the
// run ends, the slot is freed, and the request is counted as 499.
func TestClientGoneCancelsClassification(t *testing.T) {
	dir, test := testModel(t)
	cfg := testConfig(dir)
	cfg.MaxConcurrent = 1
	started := make(chan struct{}, 1)
	cfg.open = func(ctx context.Context, dir string) (model, error) {
		m, err := infer.Open(ctx, dir, cpuOptions...)
		return blockingModel{m, started}, err
	}
	s := newTestServer(t, cfg)
	ts := httptest.NewServer(s.Public)
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/classify", bytes.NewReader(encodePNG(t, fashionImage(test, 0))))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := http.DefaultClient.Do(req)
		done <- err
	}()
	<-started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("client: %v", err)
	}
	metric := `bicyc_infer_http_requests_total{code="499",handler="classify",method="post"} 1`
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(get(t, ts.URL+"/metrics"), metric); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %q", metric)
		}
	}
	if len(s.slots) != 0 {
		t.Errorf("%d slots still taken", len(s.slots))
	}
}

// TestConfigProblems checks that New reports every setting out of range at
// once, as ConfigErrors naming the field, before opening anything.
func TestConfigProblems(t *testing.T) {
	_, err := New(context.Background(), Config{Model: "m", Repository: "r", ModelName: "a/b", TopK: -1, MaxBody: 10, MaxBuffered: 5,
		QueueTimeout: -time.Second, BodyTimeout: -time.Second, MaxPixels: -1, Policy: VersionPolicy{Latest: 2, Versions: []int64{1}}})
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *ConfigError
		if !errors.As(e, &ce) {
			t.Fatalf("%v is not a ConfigError", e)
		}
		fields = append(fields, ce.Field)
	}
	if got := strings.Join(fields, " "); got != "Model ModelName Policy TopK MaxBuffered MaxConcurrent QueueTimeout BodyTimeout MaxPixels" {
		t.Errorf("problems with %s; error:\n%v", got, err)
	}
}
