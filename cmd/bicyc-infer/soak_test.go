package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/servetest"
)

// The soak tests run the real bicyc-infer binary, built by the test, as a
// separate process and measure it from outside: its peak resident set
// (VmHWM in /proc), its exit status, and every answer. They take a minute or more, so they run
// only with BICYC_SOAK=1; BICYC_SOAK_DURATION (default 60s) sets the
// server soak's length. The bounds they check are the ceilings the help
// and the README document (the Go memory ceiling; ONNX Runtime's own
// memory for the small test model is a few MiB), or tighter:
//
//   - soakServerRSS: the server's peak resident set under the mix below,
//     two classification slots, default limits: 128 MiB + 128 MiB of
//     bodies + 2 x 16 B x 16 Mpx (the documented ceiling adds 7 x
//     --max-body per slot for Open Inference Protocol batches, which this
//     mix of /v1/classify requests does not send);
//   - soakValidP99: the 99th percentile latency of a valid small image;
//   - soakCLIRSS: `bicyc-infer --batch 16` over a folder of 16 images of
//     4096x4096 16-bit RGBA: 128 MiB + 16 B x 16 Mpx.
const (
	soakServerRSS = 768 << 20
	soakValidP99  = time.Second
	soakCLIRSS    = 384 << 20
)

// soakEnabled skips the test unless BICYC_SOAK=1.
func soakEnabled(t *testing.T) {
	t.Helper()
	if os.Getenv("BICYC_SOAK") != "1" {
		t.Skip("a soak test: set BICYC_SOAK=1 to run it")
	}
}

// buildBinary builds this command into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bicyc-infer")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// largePNG encodes a 4096x4096 16-bit RGBA gradient (the largest image the
// default pixel limit allows, in the format that decodes to the most
// bytes); it is about 130 KiB, and decodes to 128 MiB.
func largePNG(t *testing.T) []byte {
	t.Helper()
	const side = 4096
	img := image.NewNRGBA64(image.Rect(0, 0, side, side))
	for y := range side {
		for x := range side {
			img.SetNRGBA64(x, y, color.NRGBA64{uint16(x * 16), uint16(y * 16), uint16((x + y) * 8), 0xffff - uint16(x*8)})
		}
	}
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// peakRSS returns a process's resident high-water mark (VmHWM) from /proc,
// or 0 once it has exited. (getrusage's maxrss of a child is no use here:
// Linux carries the high-water mark of the forked test process, hundreds
// of megabytes, over into the child's.)
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// watchRSS samples pid's high-water mark every 20 ms until stop is closed
// and then returns the largest.
func watchRSS(pid int, stop <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		var peak int64
		for {
			peak = max(peak, peakRSS(pid))
			select {
			case <-stop:
				out <- peak
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return out
}

// TestSoakCLILargeImages classifies a folder of 16 maximum-size images
// (4096x4096, 16-bit RGBA) in one batch of 16 with the real binary: every
// image gets the answer the library gives, and the process's peak
// resident set stays under soakCLIRSS (it was 4.3 GB before images were
// reduced one at a time).
func TestSoakCLILargeImages(t *testing.T) {
	soakEnabled(t)
	model, _ := testModel(t)
	bin := buildBinary(t)
	big := largePNG(t)
	dir := t.TempDir()
	for i := range 16 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("big-%02d.png", i)), big, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := referenceAnswer(t, model, big)
	cmd := exec.Command(bin, "--model", model, "--provider", "cpu", "--batch", "16", "--json", dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	peaks := watchRSS(cmd.Process.Pid, stop)
	err := cmd.Wait()
	close(stop)
	took, peak := time.Since(start), <-peaks
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	for i, line := range lines {
		var rec record
		if err := json.Unmarshal([]byte(line), &rec); err != nil || !equalResults(infer.Result{Predictions: rec.Predictions}, want) {
			t.Errorf("image %d: %s (%v), want %+v", i, line, err, want)
		}
	}
	t.Logf("16 images of 4096x4096 16-bit RGBA (%d KiB each), --batch 16: %d answers in %v, peak RSS %d MiB (bound %d MiB)",
		len(big)>>10, len(lines), took.Round(time.Millisecond), peak>>20, soakCLIRSS>>20)
	if len(lines) != 16 {
		t.Errorf("%d answers, want 16", len(lines))
	}
	if peak > soakCLIRSS {
		t.Errorf("peak RSS %d MiB, over the bound of %d MiB", peak>>20, soakCLIRSS>>20)
	}
}

// referenceAnswer classifies encoded with the library, in this process.
func referenceAnswer(t *testing.T, model string, encoded []byte) infer.Result {
	t.Helper()
	c, err := infer.Open(context.Background(), model, infer.WithProvider(infer.ProviderCPU), infer.WithLog(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.ClassifyReader(context.Background(), bytes.NewReader(encoded))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// soakServer is a running `bicyc-infer serve` child process.
type soakServer struct {
	cmd        *exec.Cmd
	url, admin string
	stderr     *servetest.SyncBuffer
}

// startServer runs the binary's serve command on loopback ports and waits
// until it listens.
func startServer(t *testing.T, bin, model string, args ...string) *soakServer {
	t.Helper()
	s := &soakServer{stderr: &servetest.SyncBuffer{}}
	s.cmd = exec.Command(bin, append([]string{"--model", model, "--provider", "cpu", "serve",
		"--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--grpc-addr", "", "--grpc-admin-addr", ""}, args...)...)
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	public := regexp.MustCompile(` on (127\.0\.0\.1:\d+)\n`)
	admin := regexp.MustCompile(`admin/reload on (127\.0\.0\.1:\d+)\n`)
	waitLog(t, s.stderr, func(log string) bool { return admin.MatchString(log) && public.MatchString(log) })
	s.url = "http://" + public.FindStringSubmatch(s.stderr.String())[1]
	s.admin = "http://" + admin.FindStringSubmatch(s.stderr.String())[1]
	return s
}

// soakTally collects what the soak's clients saw. It is safe for
// concurrent use.
type soakTally struct {
	mu       sync.Mutex
	counts   map[string]map[int]int
	latency  []time.Duration // of valid small images answered 200
	problems []string
}

func (s *soakTally) add(kind string, status int, took time.Duration, problem string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts == nil {
		s.counts = map[string]map[int]int{}
	}
	if s.counts[kind] == nil {
		s.counts[kind] = map[int]int{}
	}
	s.counts[kind][status]++
	if kind == "valid" && status == http.StatusOK {
		s.latency = append(s.latency, took)
	}
	if problem != "" && len(s.problems) < 20 {
		s.problems = append(s.problems, kind+": "+problem)
	}
}

// percentile returns the q-quantile of the valid latencies.
func (s *soakTally) percentile(q float64) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.latency) == 0 {
		return 0
	}
	sorted := slices.Clone(s.latency)
	slices.Sort(sorted)
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// soakClient is one kind of client of the soak: it sends one request and
// returns its status and a problem ("" when the answer is the right one).
type soakClient struct {
	kind  string
	count int // goroutines sending this kind
	send  func() (int, string)
}

// TestSoakServer runs the server as a child process with two
// classification slots for BICYC_SOAK_DURATION and drives it with a mix:
// valid small images (checked against the library's answers), slow bodies
// (a valid image sent in pieces over about a second), stalled bodies
// (declared 100 KB, 100 bytes sent, then silence: 408 after
// --body-timeout), declared lengths of 1e12 (413 at once) and 4096x4096
// 16-bit images (valid, each decoding to 128 MiB). It checks: no wrong
// answer and no unexpected status, valid small images answered with p99
// under soakValidP99, the process alive and healthy at the end and
// exiting 0 on SIGTERM, and its peak resident set under soakServerRSS.
func TestSoakServer(t *testing.T) {
	soakEnabled(t)
	duration := 60 * time.Second
	if d, err := time.ParseDuration(os.Getenv("BICYC_SOAK_DURATION")); err == nil {
		duration = d
	}
	model, test := testModel(t)
	bin := buildBinary(t)
	srv := startServer(t, bin, model, "--max-concurrent", "2", "--body-timeout", "2s", "--queue-timeout", "5s")
	clients := soakClients(t, srv.url, model, test)
	tally := &soakTally{}
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for _, c := range clients {
		for range c.count {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					start := time.Now()
					status, problem := c.send()
					tally.add(c.kind, status, time.Since(start), problem)
				}
			})
		}
	}
	wg.Wait()
	healthy := get(t, srv.url+"/healthz") == "ok\n"
	peak := peakRSS(srv.cmd.Process.Pid)
	srv.cmd.Process.Signal(syscall.SIGTERM)
	exitErr := srv.cmd.Wait()
	reportSoak(t, tally, duration, peak)
	if !healthy || exitErr != nil {
		t.Errorf("server healthy at the end: %v; exit: %v; stderr:\n%s", healthy, exitErr, srv.stderr.String())
	}
	if p99 := tally.percentile(0.99); p99 > soakValidP99 {
		t.Errorf("valid requests: p99 latency %v, over the bound of %v", p99, soakValidP99)
	}
	if peak > soakServerRSS {
		t.Errorf("server peak RSS %d MiB, over the bound of %d MiB", peak>>20, soakServerRSS>>20)
	}
}

// reportSoak logs the counts, latencies and memory of a soak and fails the
// test for every problem the clients saw.
func reportSoak(t *testing.T, tally *soakTally, duration time.Duration, peak int64) {
	t.Helper()
	var b strings.Builder
	total := 0
	for _, kind := range slices.Sorted(maps.Keys(tally.counts)) {
		fmt.Fprintf(&b, "\n  %-10s", kind)
		for _, status := range slices.Sorted(maps.Keys(tally.counts[kind])) {
			fmt.Fprintf(&b, " %d x%d", status, tally.counts[kind][status])
			total += tally.counts[kind][status]
		}
	}
	t.Logf("%d requests in %v; by kind and status:%s", total, duration, b.String())
	t.Logf("valid small images: p50 %v, p99 %v, max %v (bound p99 %v)", tally.percentile(0.5), tally.percentile(0.99), tally.percentile(1), soakValidP99)
	t.Logf("server peak RSS (VmHWM) %d MiB (bound %d MiB)", peak>>20, soakServerRSS>>20)
	for _, p := range tally.problems {
		t.Error(p)
	}
}

// soakClients builds the request mix of TestSoakServer against url, with
// the answers the library gives for every valid image.
func soakClients(t *testing.T, url, model string, test *data.Dataset) []soakClient {
	t.Helper()
	type valid struct {
		body []byte
		want infer.Result
	}
	var small []valid
	for i := range 24 {
		body := encodePNG(t, fashionImage(test, 2000+i))
		small = append(small, valid{body, referenceAnswer(t, model, body)})
	}
	big := largePNG(t)
	bigWant := referenceAnswer(t, model, big)
	host := strings.TrimPrefix(url, "http://")
	client := &http.Client{Timeout: 60 * time.Second}
	var next sync.Mutex
	n := 0
	pick := func() valid {
		next.Lock()
		defer next.Unlock()
		n++
		return small[n%len(small)]
	}
	return []soakClient{
		{"valid", 4, func() (int, string) { v := pick(); return classifyCheck(client, url, bytes.NewReader(v.body), v.want) }},
		{"slow", 2, func() (int, string) {
			v := pick()
			return classifyCheck(client, url, &slowReader{data: v.body, piece: len(v.body)/8 + 1, gap: 120 * time.Millisecond}, v.want)
		}},
		{"stalled", 4, func() (int, string) {
			return rawExchange(host, "Content-Length: 100000", big[:100], http.StatusRequestTimeout, 10*time.Second)
		}},
		{"oversize", 1, func() (int, string) {
			time.Sleep(20 * time.Millisecond)
			return rawExchange(host, "Content-Length: 1000000000000", nil, http.StatusRequestEntityTooLarge, time.Second)
		}},
		{"large", 1, func() (int, string) { return classifyCheck(client, url, bytes.NewReader(big), bigWant) }},
	}
}

// classifyCheck posts body as a PNG and reports the status and whether the
// answer differs from want.
func classifyCheck(client *http.Client, url string, body io.Reader, want infer.Result) (int, string) {
	req, err := http.NewRequest(http.MethodPost, url+"/v1/classify", body)
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "image/png")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "transport error: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var got infer.Result
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &got) != nil || !equalResults(got, want) {
		return resp.StatusCode, fmt.Sprintf("status %d, answer %s, want %+v", resp.StatusCode, b, want)
	}
	return resp.StatusCode, ""
}

// rawExchange sends a classify request with the given extra header and
// body over a new connection to host and reads the answer, which must have
// status want within limit.
func rawExchange(host, header string, body []byte, want int, limit time.Duration) (int, string) {
	conn, err := net.Dial("tcp", host)
	if err != nil {
		return 0, err.Error()
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /v1/classify HTTP/1.1\r\nHost: soak\r\nContent-Type: image/png\r\n%s\r\n\r\n", header)
	conn.Write(body)
	conn.SetReadDeadline(start.Add(limit))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, fmt.Sprintf("no answer within %v: %v", limit, err)
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		return resp.StatusCode, fmt.Sprintf("status %d, want %d", resp.StatusCode, want)
	}
	return resp.StatusCode, ""
}

// slowReader returns data piece bytes at a time, sleeping gap before each
// piece after the first: a slow upload.
type slowReader struct {
	data  []byte
	piece int
	gap   time.Duration
	sent  bool
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	if r.sent {
		time.Sleep(r.gap)
	}
	r.sent = true
	n := copy(p[:min(len(p), r.piece)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestSoakRepository serves a model repository with the real binary: the
// test model as fmnist/1 and, written by `add-classes --next-version`, a
// fmnist/2 that adds Sandal. For BICYC_SOAK_DURATION, 4 clients classify
// through /v1/classify?model=fmnist and 4 through the Open Inference
// Protocol (/v2/models/fmnist/infer, a BYTES tensor), while the admin
// listener swaps versions every 200 ms (pin 1, pin 2, both, latest: each
// swap loads one version and unloads another). It checks: no request
// fails, every swap answers 200, the process exits 0 on SIGTERM, and
// reports each path's latency and the peak resident set.
func TestSoakRepository(t *testing.T) {
	soakEnabled(t)
	duration := 60 * time.Second
	if d, err := time.ParseDuration(os.Getenv("BICYC_SOAK_DURATION")); err == nil {
		duration = d
	}
	root, modelDir := makeRepository(t)
	_, test := testModel(t)
	labelled := filepath.Join(t.TempDir(), "labelled")
	classFolder(t, labelled, []int{5}, 0, 10)
	if _, _, err := runCommand(t, nil, "add-classes", "--provider", "cpu", "--from", labelled, "--out", modelDir, "--next-version"); err != nil {
		t.Fatal(err)
	}
	bin := buildBinary(t)
	srv := &soakServer{stderr: &servetest.SyncBuffer{}}
	srv.cmd = exec.Command(bin, "--provider", "cpu", "serve", "--model-repository", root,
		"--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--grpc-addr", "", "--grpc-admin-addr", "", "--max-concurrent", "2", "--queue-timeout", "5s")
	srv.cmd.Stderr = srv.stderr
	if err := srv.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	public := regexp.MustCompile(` on (127\.0\.0\.1:\d+)\n`)
	admin := regexp.MustCompile(`admin/reload on (127\.0\.0\.1:\d+)\n`)
	waitLog(t, srv.stderr, func(log string) bool { return admin.MatchString(log) && public.MatchString(log) })
	url := "http://" + public.FindStringSubmatch(srv.stderr.String())[1]
	adminURL := "http://" + admin.FindStringSubmatch(srv.stderr.String())[1]

	var images [][]byte
	for i := range 24 {
		images = append(images, encodePNG(t, fashionImage(test, 3000+i)))
	}
	known := map[string]bool{"Sandal": true}
	for _, name := range data.FashionMNISTClasses[:3] {
		known[name] = true
	}
	client := &http.Client{Timeout: 60 * time.Second}
	tally := map[string]*soakTally{"v1": {}, "v2": {}}
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for _, kind := range []string{"v1", "v2"} {
		for c := range 4 {
			wg.Go(func() {
				for i := c; time.Now().Before(deadline); i += 4 {
					start := time.Now()
					status, problem := soakClassify(client, url, kind, images[i%len(images)], known)
					tally[kind].add("valid", status, time.Since(start), problem)
				}
			})
		}
	}
	policies := []string{"specific:1", "specific:2", "latest:2", "latest:1"}
	swaps, failedSwaps := 0, 0
	for ; time.Now().Before(deadline); swaps++ {
		p := policies[swaps%len(policies)]
		resp, err := client.Post(adminURL+"/v2/repository/models/fmnist/load", "application/json",
			strings.NewReader(`{"parameters": {"version_policy": "`+p+`"}}`))
		if err != nil || resp.StatusCode != http.StatusOK {
			failedSwaps++
			t.Errorf("load %s: %v %v", p, err, resp)
		}
		if resp != nil {
			resp.Body.Close()
		}
		time.Sleep(200 * time.Millisecond)
	}
	wg.Wait()
	peak := peakRSS(srv.cmd.Process.Pid)
	srv.cmd.Process.Signal(syscall.SIGTERM)
	exitErr := srv.cmd.Wait()
	t.Logf("%d version swaps (%d failed) in %v", swaps, failedSwaps, duration)
	for _, kind := range []string{"v1", "v2"} {
		t.Logf("%s path:", kind)
		reportSoak(t, tally[kind], duration, peak)
	}
	if exitErr != nil {
		t.Errorf("exit: %v; stderr:\n%s", exitErr, srv.stderr.String())
	}
}

// soakClassify sends img to the server at base by the v1 or v2 path
// (kind) for model fmnist and returns the status and, unless the answer
// is 200 with a best class in known, the problem.
func soakClassify(client *http.Client, base, kind string, img []byte, known map[string]bool) (int, string) {
	url, contentType, body := base+"/v1/classify?model=fmnist", "image/png", img
	if kind == "v2" {
		body, _ = json.Marshal(map[string]any{"inputs": []any{map[string]any{"name": "image", "shape": []int{1}, "datatype": "BYTES",
			"data": []string{base64.StdEncoding.EncodeToString(img)}}}, "outputs": []any{map[string]any{"name": "distance", "parameters": map[string]any{"classification": 1}}}})
		url, contentType = strings.Replace(url, "/v1/classify?model=fmnist", "/v2/models/fmnist/infer", 1), "application/json"
	}
	resp, err := client.Post(url, contentType, bytes.NewReader(body))
	if err != nil {
		return 0, "transport error: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var best string
	var v1 struct{ Predictions []struct{ Name string } }
	var v2 struct{ Outputs []struct{ Data []string } }
	switch {
	case kind == "v1" && json.Unmarshal(b, &v1) == nil && len(v1.Predictions) > 0:
		best = v1.Predictions[0].Name
	case kind == "v2" && json.Unmarshal(b, &v2) == nil && len(v2.Outputs) == 1 && len(v2.Outputs[0].Data) == 1:
		if parts := strings.SplitN(v2.Outputs[0].Data[0], ":", 3); len(parts) == 3 {
			best = parts[2]
		}
	}
	if resp.StatusCode != http.StatusOK || !known[best] {
		return resp.StatusCode, fmt.Sprintf("status %d, answer %s", resp.StatusCode, b)
	}
	return resp.StatusCode, ""
}
