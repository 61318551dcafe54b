// Command serve measures bicyc's HTTP paths on one machine, in one
// process: POST /v1/classify (the raw PNG as the body) and the Open
// Inference Protocol's POST /v2/models/{name}/infer with the images as a
// BYTES tensor and preprocessed as an FP32 tensor, each as JSON (images
// base64) and as Triton's binary tensor data (the distances answered as
// binary data too). It serves the model with package serve on a loopback
// listener and sends the requests one at a time, the paths interleaved
// request by request so that all see the same machine, and prints the
// p50, p90, p99 and mean latency of single images, then the p50, mean and
// images per second of batches (-batch, 256 by default), with the
// machine's load average before and after.
//
//	go run ./bench/serve [-model DIR] [-requests 2000] [-batch 256] [-batches 20]
//
// go test ./bench/serve runs its smallest form.
//
// Without -model it serves the small model the tests build (a random
// convnet over Fashion-MNIST, 3 classes).
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/testmodel/small"
	"github.com/bicyc/bicyc/serve"
)

func main() {
	var o options
	flag.StringVar(&o.model, "model", "", "model directory exported by bicyc (default: the tests' small model)")
	flag.IntVar(&o.requests, "requests", 2000, "batch-1 requests per path")
	flag.IntVar(&o.warmup, "warmup", 100, "batch-1 requests per path before measuring")
	flag.IntVar(&o.batch, "batch", 256, "images per request of the throughput paths")
	flag.IntVar(&o.batches, "batches", 20, "requests per throughput path")
	flag.Parse()
	log.SetFlags(0)
	if o.model == "" {
		dir, err := small.Dir()
		if err != nil {
			log.Fatal(err)
		}
		o.model = dir
		defer small.Cleanup()
	}
	if err := run(os.Stdout, o); err != nil {
		log.Fatal(err)
	}
}

// options are the command's flags.
type options struct {
	model                            string
	requests, warmup, batch, batches int
}

// path is one way of sending requests: its name, URL and bodies (each
// with its headers), and the time each measured request took.
type path struct {
	name, url string
	bodies    []request
	took      []time.Duration
}

type request struct {
	body   []byte
	header http.Header
}

// send posts one request and checks it succeeds.
func (p *path) send(client *http.Client, i int) (time.Duration, error) {
	r := p.bodies[i%len(p.bodies)]
	req, err := http.NewRequest("POST", p.url, bytes.NewReader(r.body))
	if err != nil {
		return 0, err
	}
	req.Header = r.header
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %d %s", p.name, resp.StatusCode, b)
	}
	return time.Since(start), nil
}

// run serves o.model and measures every path, printing the tables to w.
func run(w io.Writer, o options) error {
	fm := data.FashionMNISTDir
	test, err := data.LoadIDX(fm+"/t10k-images-idx3-ubyte.gz", fm+"/t10k-labels-idx1-ubyte.gz")
	if err != nil {
		return err
	}
	s, err := serve.New(context.Background(), serve.Config{Model: o.model, ModelName: "m",
		Options: []infer.Option{infer.WithProvider(infer.ProviderCPU), infer.WithThreads(1)},
		MaxBody: 64 << 20, MaxConcurrent: 2, QueueTimeout: time.Minute})
	if err != nil {
		return err
	}
	defer s.Close()
	ts := httptest.NewServer(s.Public)
	defer ts.Close()
	c, err := infer.Open(context.Background(), o.model, infer.WithProvider(infer.ProviderCPU))
	if err != nil {
		return err
	}
	pre := c.Manifest().Preprocess
	c.Close()

	var pngs [][]byte
	var tensors [][]float32
	for i := range max(64, o.batch) {
		img := &image.Gray{Pix: test.Image(i), Stride: test.Width, Rect: image.Rect(0, 0, test.Width, test.Height)}
		pngs = append(pngs, testPNG(img))
		tensors = append(tensors, pre.Image(img))
	}
	shape := func(n int) []int { return []int{n, pre.Channels, pre.Height, pre.Width} }
	inferURL := ts.URL + "/v2/models/m/infer"
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	// jsonImages and jsonTensor are the protocol's JSON requests (images
	// base64), binaryImages and binaryTensor Triton's binary tensor data
	// (raw PNG bytes, little-endian float32) with the distances asked for
	// as binary data too, as Triton's clients do by default.
	jsonImages := func(imgs [][]byte) request {
		b64 := make([]string, len(imgs))
		for i, b := range imgs {
			b64[i] = base64.StdEncoding.EncodeToString(b)
		}
		return request{mustJSON(map[string]any{"inputs": []any{map[string]any{
			"name": "image", "shape": []int{len(imgs)}, "datatype": "BYTES", "data": b64}}, "outputs": []any{map[string]any{"name": "distance"}}}), jsonHeader}
	}
	jsonTensor := func(xs [][]float32) request {
		return request{mustJSON(map[string]any{"inputs": []any{map[string]any{
			"name": "input", "shape": shape(len(xs)), "datatype": "FP32", "data": slices.Concat(xs...)}}, "outputs": []any{map[string]any{"name": "distance"}}}), jsonHeader}
	}
	framed := func(input map[string]any, tail []byte) request {
		input["parameters"] = map[string]any{"binary_data_size": len(tail)}
		head := mustJSON(map[string]any{"inputs": []any{input}, "outputs": []any{map[string]any{"name": "distance", "parameters": map[string]any{"binary_data": true}}}})
		return request{append(head, tail...), http.Header{"Content-Type": {"application/octet-stream"}, "Inference-Header-Content-Length": {strconv.Itoa(len(head))}}}
	}
	binaryImages := func(imgs [][]byte) request {
		var tail []byte
		for _, b := range imgs {
			tail = binary.LittleEndian.AppendUint32(tail, uint32(len(b)))
			tail = append(tail, b...)
		}
		return framed(map[string]any{"name": "image", "shape": []int{len(imgs)}, "datatype": "BYTES"}, tail)
	}
	binaryTensor := func(xs [][]float32) request {
		var tail []byte
		for _, x := range slices.Concat(xs...) {
			tail = binary.LittleEndian.AppendUint32(tail, math.Float32bits(x))
		}
		return framed(map[string]any{"name": "input", "shape": shape(len(xs)), "datatype": "FP32"}, tail)
	}

	single := []*path{
		{name: "v1 /v1/classify (PNG body)", url: ts.URL + "/v1/classify"},
		{name: "v2 JSON BYTES (base64 PNG)", url: inferURL},
		{name: "v2 binary BYTES (PNG)", url: inferURL},
		{name: "v2 JSON FP32 [1,C,H,W]", url: inferURL},
		{name: "v2 binary FP32 [1,C,H,W]", url: inferURL},
	}
	for i := range 64 {
		single[0].bodies = append(single[0].bodies, request{pngs[i], http.Header{"Content-Type": {"image/png"}}})
		single[1].bodies = append(single[1].bodies, jsonImages(pngs[i:i+1]))
		single[2].bodies = append(single[2].bodies, binaryImages(pngs[i:i+1]))
		single[3].bodies = append(single[3].bodies, jsonTensor(tensors[i:i+1]))
		single[4].bodies = append(single[4].bodies, binaryTensor(tensors[i:i+1]))
	}
	n := o.batch
	batched := []*path{
		{name: fmt.Sprintf("v2 JSON BYTES [%d]", n), url: inferURL, bodies: []request{jsonImages(pngs[:n])}},
		{name: fmt.Sprintf("v2 binary BYTES [%d]", n), url: inferURL, bodies: []request{binaryImages(pngs[:n])}},
		{name: fmt.Sprintf("v2 JSON FP32 [%d,C,H,W]", n), url: inferURL, bodies: []request{jsonTensor(tensors[:n])}},
		{name: fmt.Sprintf("v2 binary FP32 [%d,C,H,W]", n), url: inferURL, bodies: []request{binaryTensor(tensors[:n])}},
	}

	client := &http.Client{}
	load0 := loadAverage()
	measure := func(paths []*path, warmup, count int) error {
		for i := range warmup + count {
			for _, p := range paths {
				took, err := p.send(client, i)
				if err != nil {
					return err
				}
				if i >= warmup {
					p.took = append(p.took, took)
				}
			}
		}
		return nil
	}
	if err := measure(single, o.warmup, o.requests); err != nil {
		return err
	}
	if err := measure(batched, 1, o.batches); err != nil {
		return err
	}
	fmt.Fprintf(w, "model %s; one request at a time, paths interleaved; GOMAXPROCS %d, %s\n", o.model, runtime.GOMAXPROCS(0), cpuModel())
	fmt.Fprintf(w, "load average before %s, after %s\n\n", load0, loadAverage())
	fmt.Fprintf(w, "batch 1, %d requests per path:\n", o.requests)
	fmt.Fprintf(w, "%-30s %10s %10s %10s %10s %9s\n", "path", "p50", "p90", "p99", "mean", "body")
	for _, p := range single {
		slices.Sort(p.took)
		q := func(f float64) time.Duration { return p.took[min(len(p.took)-1, int(f*float64(len(p.took))))] }
		fmt.Fprintf(w, "%-30s %10v %10v %10v %10v %8dB\n", p.name, q(0.5).Round(time.Microsecond), q(0.9).Round(time.Microsecond),
			q(0.99).Round(time.Microsecond), mean(p.took).Round(time.Microsecond), len(p.bodies[0].body))
	}
	fmt.Fprintf(w, "\nbatch %d, %d requests per path:\n", n, o.batches)
	fmt.Fprintf(w, "%-30s %10s %10s %12s %11s\n", "path", "p50", "mean", "images/s", "body")
	for _, p := range batched {
		slices.Sort(p.took)
		fmt.Fprintf(w, "%-30s %10v %10v %12.0f %10dB\n", p.name, p.took[len(p.took)/2].Round(time.Microsecond), mean(p.took).Round(time.Microsecond),
			float64(n)/mean(p.took).Seconds(), len(p.bodies[0].body))
	}
	return nil
}

func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

func testPNG(img image.Image) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		log.Fatal(err)
	}
	return b.Bytes()
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		log.Fatal(err)
	}
	return b
}

// loadAverage is /proc/loadavg's 1-, 5- and 15-minute load.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// cpuModel is /proc/cpuinfo's first model name.
func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
