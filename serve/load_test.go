package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/image/draw"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/servetest"
)

// concurrencyProbe records the most model runs (ClassifyInputs) in flight
// at once over every model it wraps.
type concurrencyProbe struct{ inFlight, peak atomic.Int64 }

// probedModel is a model whose ClassifyInputs calls the probe counts.
type probedModel struct {
	model
	probe *concurrencyProbe
}

func (m probedModel) ClassifyInputs(ctx context.Context, inputs []infer.Input) ([]infer.Result, error) {
	n := m.probe.inFlight.Add(1)
	defer m.probe.inFlight.Add(-1)
	for p := m.probe.peak.Load(); n > p && !m.probe.peak.CompareAndSwap(p, n); p = m.probe.peak.Load() {
	}
	return m.model.ClassifyInputs(ctx, inputs)
}

// loadRequest is one request the load test sends, and what must come back:
// a status, and for a valid image the result of Classifier.Classify.
type loadRequest struct {
	kind        string
	contentType string
	body        []byte
	status      int
	want        *infer.Result
}

// rssBytes returns this process's resident set (VmRSS) or, with peak, its
// high-water mark (VmHWM), from /proc/self/status.
func rssBytes(t *testing.T, peak bool) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	key := "VmRSS:"
	if peak {
		key = "VmHWM:"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == key {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("/proc/self/status has no %s", key)
	return 0
}

func heapInuse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// loadRequests builds the request mix: real Fashion-MNIST test images as
// PNG (raw, multipart), as JPEG and as 10x upscaled PNG without content
// type (resized back by the preprocessing), each with the answer the
// reference classifier gives for the decoded image; then malformed requests
// with the status each must get under the limits of TestServerUnderLoad.
func loadRequests(t *testing.T, ref *infer.Classifier) []loadRequest {
	t.Helper()
	_, test := testModel(t)
	var reqs []loadRequest
	// valid adds a request whose image is encoded, sent as body.
	valid := func(kind, contentType string, body, encoded []byte) {
		img, _, err := imaging.DecodeImage(bytes.NewReader(encoded), infer.DefaultMaxPixels)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Classify(context.Background(), img)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, loadRequest{kind: kind, contentType: contentType, body: body, status: http.StatusOK, want: &want})
	}
	for i := range 48 {
		img := fashionImage(test, 1000+i)
		pngBody := encodePNG(t, img)
		switch i % 4 {
		case 0:
			valid("png", "image/png", pngBody, pngBody)
		case 1:
			contentType, body := multipartBody(t, "image", pngBody)
			valid("multipart png", contentType, body, pngBody)
		case 2:
			var b bytes.Buffer
			if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
				t.Fatal(err)
			}
			valid("jpeg", "image/jpeg", b.Bytes(), b.Bytes())
		case 3:
			big := image.NewGray(image.Rect(0, 0, 280, 280))
			draw.NearestNeighbor.Scale(big, big.Bounds(), img, img.Bounds(), draw.Src, nil)
			body := encodePNG(t, big)
			valid("280x280 png, no content type", "", body, body)
		}
	}
	good := reqs[0].body
	rng := rand.New(rand.NewPCG(5, 6))
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	oversized := bytes.Repeat(good, (300<<10)/len(good)+1)
	noImage, noImageBody := multipartBody(t, "file", good)
	reqs = append(reqs,
		loadRequest{kind: "garbage", contentType: "application/octet-stream", body: garbage, status: http.StatusUnsupportedMediaType},
		loadRequest{kind: "truncated png", contentType: "image/png", body: good[:len(good)*2/3], status: http.StatusBadRequest},
		loadRequest{kind: "declares 4096x4096", contentType: "image/png", body: pngHeader(4096, 4096), status: http.StatusRequestEntityTooLarge},
		loadRequest{kind: "declares 100000x100000", contentType: "image/png", body: pngHeader(100000, 100000), status: http.StatusRequestEntityTooLarge},
		loadRequest{kind: "300 KiB body", contentType: "image/png", body: oversized, status: http.StatusRequestEntityTooLarge},
		loadRequest{kind: "png sent as application/json", contentType: "application/json", body: good, status: http.StatusUnsupportedMediaType},
		loadRequest{kind: "empty", contentType: "image/png", status: http.StatusBadRequest},
		loadRequest{kind: "multipart without image", contentType: noImage, body: noImageBody, status: http.StatusBadRequest},
	)
	return reqs
}

// TestServerUnderLoad serves the test model on a loopback listener with
// tight limits (256 KiB bodies, 1 Mpx images, 2 concurrent
// classifications) and drives it with 12 clients for 12 s (2 minutes with
// BICYC_LONG_TESTS=1), mixing valid images in four encodings with 30%
// malformed requests, while the model is reloaded every 500 ms, alternately
// by SIGHUP's channel and POST /admin/reload. It asserts: no transport
// error and no 500; every valid image gets 200 with exactly the answer of
// Classifier.Classify; every malformed request gets its 4xx; never more than
// 2 classifications at once; the Go heap back to within 32 MiB of where it
// started and the process's resident set within 256 MiB; /metrics counts
// what the clients saw. It logs the requests by kind and status, and RSS.
func TestServerUnderLoad(t *testing.T) {
	duration := 12 * time.Second
	if os.Getenv("BICYC_LONG_TESTS") == "1" {
		duration = 2 * time.Minute
	}
	const clients = 12
	dir, _ := testModel(t)
	ref, err := infer.Open(context.Background(), dir, append(cpuOptions, infer.WithMaxPixels(1<<20))...)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	reqs := loadRequests(t, ref)
	srv := startLoadServer(t, dir)

	heap0, rss0 := heapInuse(), rssBytes(t, false)
	tally := &loadTally{counts: map[string]map[int]int{}}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() { loadClient(client, srv.url, reqs, uint64(c), deadline, tally) })
	}
	reloads, peakRSS := srv.reloadUntil(t, deadline, tally)
	wg.Wait()
	// The last SIGHUP-style reload may still be running.
	okReloads := fmt.Sprintf(`bicyc_infer_model_reloads_total{result="ok"} %d`, reloads)
	metrics := get(t, srv.url+"/metrics")
	for wait := time.Now().Add(10 * time.Second); !strings.Contains(metrics, okReloads) && time.Now().Before(wait); {
		time.Sleep(10 * time.Millisecond)
		metrics = get(t, srv.url+"/metrics")
	}
	// The clients' transport may hold connections it dialed but never
	// used, which shutdown waits for like requests in flight.
	client.CloseIdleConnections()
	if err := srv.stop(); err != nil {
		t.Errorf("serve: %v", err)
	}
	heap1, rss1 := heapInuse(), rssBytes(t, false)

	byStatus, total, breakdown := tally.byStatus()
	t.Logf("%d requests in %v (%.0f/s) by %d clients, %d reloads; by status %v; by kind:%s", total, duration, float64(total)/duration.Seconds(), clients, reloads, byStatus, breakdown)
	t.Logf("peak classifications in flight %d; Go heap in use %.1f -> %.1f MiB; RSS %.0f MiB before, %.0f MiB peak sampled, %.0f MiB after, process high-water mark %.0f MiB",
		srv.probe.peak.Load(), float64(heap0)/(1<<20), float64(heap1)/(1<<20), float64(rss0)/(1<<20), float64(peakRSS)/(1<<20), float64(rss1)/(1<<20), float64(rssBytes(t, true))/(1<<20))
	for _, p := range tally.problems {
		t.Error(p)
	}
	if total < loadMinRequests {
		t.Errorf("only %d requests were served", total)
	}
	if p := srv.probe.peak.Load(); p > int64(srv.cfg.MaxConcurrent) {
		t.Errorf("%d classifications ran at once, the limit is %d", p, srv.cfg.MaxConcurrent)
	}
	if heap1 > heap0+32<<20 {
		t.Errorf("Go heap in use grew from %d to %d bytes", heap0, heap1)
	}
	if grown := max(peakRSS, rss1) - rss0; grown > 256<<20 {
		t.Errorf("resident set grew by %d MiB", grown>>20)
	}
	srv.checkMetrics(t, metrics, byStatus, okReloads)
	if _, err := bundle.Open(dir); err != nil {
		t.Error(err)
	}
}

// loadServer is the server under load, on a loopback listener.
type loadServer struct {
	url   string
	admin string // the admin listener's URL
	cfg   Config
	probe *concurrencyProbe
	log   *servetest.SyncBuffer
	hup   chan struct{}
	stop  func() error // cancels serving and returns serve's error
}

// startLoadServer serves the model in dir with the limits of
// TestServerUnderLoad, counting classifications in flight with a probe.
func startLoadServer(t *testing.T, dir string) *loadServer {
	t.Helper()
	probe := &concurrencyProbe{}
	log := &servetest.SyncBuffer{}
	cfg := Config{Model: dir, Options: cpuOptions, MaxPixels: 1 << 20, MaxBody: 256 << 10, MaxConcurrent: 2,
		QueueTimeout: loadQueueTimeout, Log: log}
	cfg.open = func(ctx context.Context, dir string) (model, error) {
		m, err := infer.Open(context.Background(), dir, append(cpuOptions, infer.WithMaxPixels(1<<20), infer.WithTopK(1<<30))...)
		if err != nil {
			return nil, err
		}
		return probedModel{m, probe}, nil
	}
	s := newTestServer(t, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	adminLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan struct{}, 1)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, Listeners{Public: ln, Admin: adminLn}, testTimeouts, hup) }()
	stop := func() error {
		cancel()
		return <-served
	}
	return &loadServer{url: "http://" + ln.Addr().String(), admin: "http://" + adminLn.Addr().String(),
		cfg: s.cfg, probe: probe, log: log, hup: hup, stop: stop}
}

// reloadUntil reloads the model every 500 ms until deadline, alternately by
// SIGHUP's channel and POST /admin/reload, sampling the resident set; it
// returns the number of reloads and the peak resident set sampled.
func (srv *loadServer) reloadUntil(t *testing.T, deadline time.Time, tally *loadTally) (reloads int, peakRSS int64) {
	for tick := time.NewTicker(500 * time.Millisecond); time.Now().Before(deadline); <-tick.C {
		peakRSS = max(peakRSS, rssBytes(t, false))
		if reloads%2 == 0 {
			srv.hup <- struct{}{}
		} else if status, body := servetest.PostReload(t, srv.admin); status != http.StatusOK {
			tally.problem("POST /admin/reload: %d %s", status, body)
		}
		reloads++
	}
	return reloads, peakRSS
}

// checkMetrics checks that /metrics counts the requests the clients saw by
// status and every reload as ok, and that the log shows no failed reload.
func (srv *loadServer) checkMetrics(t *testing.T, metrics string, byStatus map[int]int, okReloads string) {
	t.Helper()
	for status, n := range byStatus {
		line := fmt.Sprintf(`bicyc_infer_http_requests_total{code="%d",handler="classify",method="post"} %d`, status, n)
		if !strings.Contains(metrics, line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if !strings.Contains(metrics, okReloads) {
		t.Errorf("/metrics lacks %q; log:\n%s", okReloads, srv.log.String())
	}
	if strings.Contains(srv.log.String(), "failed") {
		t.Errorf("a reload failed:\n%s", srv.log.String())
	}
}

// loadTally collects what the load test's clients saw: counts by request
// kind and status, and the first problems.
type loadTally struct {
	mu       sync.Mutex
	counts   map[string]map[int]int
	problems []string
}

// problem records a problem; only the first 20 are kept.
func (lt *loadTally) problem(format string, args ...any) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if len(lt.problems) < 20 {
		lt.problems = append(lt.problems, fmt.Sprintf(format, args...))
	}
}

// merge adds one client's counts.
func (lt *loadTally) merge(local map[string]map[int]int) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	for kind, byStatus := range local {
		if lt.counts[kind] == nil {
			lt.counts[kind] = map[int]int{}
		}
		for status, n := range byStatus {
			lt.counts[kind][status] += n
		}
	}
}

// byStatus returns the requests by status, their total, and a breakdown by
// kind for the log.
func (lt *loadTally) byStatus() (byStatus map[int]int, total int, breakdown string) {
	byStatus = map[int]int{}
	kinds := make([]string, 0, len(lt.counts))
	for kind := range lt.counts {
		kinds = append(kinds, kind)
	}
	sort.Strings(kinds)
	var b strings.Builder
	for _, kind := range kinds {
		fmt.Fprintf(&b, "\n  %-30s", kind)
		for status, n := range lt.counts[kind] {
			fmt.Fprintf(&b, " %d x%d", status, n)
			byStatus[status] += n
			total += n
		}
	}
	return byStatus, total, b.String()
}

// loadClient sends requests of reqs to url until deadline, about 30%
// malformed and the rest valid images, drawn with a random source seeded by
// seed, and records what came back in tally.
func loadClient(client *http.Client, url string, reqs []loadRequest, seed uint64, deadline time.Time, tally *loadTally) {
	numValid := 0
	for _, r := range reqs {
		if r.want != nil {
			numValid++
		}
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	local := map[string]map[int]int{}
	for time.Now().Before(deadline) {
		r := reqs[rng.IntN(numValid)]
		if rng.IntN(10) < 3 {
			r = reqs[numValid+rng.IntN(len(reqs)-numValid)]
		}
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/classify", bytes.NewReader(r.body))
		if r.contentType != "" {
			req.Header.Set("Content-Type", r.contentType)
		}
		resp, err := client.Do(req)
		if err != nil {
			tally.problem("%s: transport error %v", r.kind, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if local[r.kind] == nil {
			local[r.kind] = map[int]int{}
		}
		local[r.kind][resp.StatusCode]++
		switch {
		case resp.StatusCode != r.status:
			tally.problem("%s: status %d %s, want %d", r.kind, resp.StatusCode, body, r.status)
		case r.want != nil:
			var got infer.Result
			if err := json.Unmarshal(body, &got); err != nil || !equalResults(got, *r.want) {
				tally.problem("%s: wrong answer %s (%v), want %+v", r.kind, body, err, *r.want)
			}
		}
	}
	tally.merge(local)
}
