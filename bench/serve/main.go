// Command serve measures the latency of bicyc's two HTTP paths on one
// machine, in one process: POST /v1/classify (the raw PNG as the body) and
// the Open Inference Protocol's POST /v2/models/{name}/infer, with the
// image as a base64 BYTES tensor and preprocessed as an FP32 tensor. It
// serves the model with package serve on a loopback listener and sends
// the requests one at a time, the paths interleaved request by request so
// that all three see the same machine, and prints each path's p50, p90,
// p99 and mean, with the machine's load average before and after.
//
//	go run ./bench/serve [-model DIR] [-requests 2000]
//
// Without -model it serves the small model the tests build (a random
// convnet over Fashion-MNIST, 3 classes).
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/testmodel/small"
	"github.com/bicyc/bicyc/serve"
)

func main() {
	model := flag.String("model", "", "model directory exported by bicyc (default: the tests' small model)")
	requests := flag.Int("requests", 2000, "requests per path")
	warmup := flag.Int("warmup", 100, "requests per path before measuring")
	flag.Parse()
	log.SetFlags(0)
	if *model == "" {
		dir, err := small.Dir()
		if err != nil {
			log.Fatal(err)
		}
		*model = dir
		defer small.Cleanup()
	}
	fm := data.FashionMNISTDir
	test, err := data.LoadIDX(fm+"/t10k-images-idx3-ubyte.gz", fm+"/t10k-labels-idx1-ubyte.gz")
	if err != nil {
		log.Fatal(err)
	}
	s, err := serve.New(context.Background(), serve.Config{Model: *model, ModelName: "m",
		Options: []infer.Option{infer.WithProvider(infer.ProviderCPU), infer.WithThreads(1)},
		MaxBody: 32 << 20, MaxConcurrent: 2, QueueTimeout: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s.Public)
	defer ts.Close()
	c, err := infer.Open(context.Background(), *model, infer.WithProvider(infer.ProviderCPU))
	if err != nil {
		log.Fatal(err)
	}
	pre := c.Manifest().Preprocess
	c.Close()

	type path struct {
		name, url, contentType string
		bodies                 [][]byte
		took                   []time.Duration
	}
	paths := []*path{
		{name: "v1 /v1/classify (PNG body)", url: ts.URL + "/v1/classify", contentType: "image/png"},
		{name: "v2 infer, BYTES (base64 PNG)", url: ts.URL + "/v2/models/m/infer", contentType: "application/json"},
		{name: "v2 infer, FP32 [1,C,H,W]", url: ts.URL + "/v2/models/m/infer", contentType: "application/json"},
	}
	for i := range 64 {
		img := &image.Gray{Pix: test.Image(i), Stride: test.Width, Rect: image.Rect(0, 0, test.Width, test.Height)}
		encoded := testPNG(img)
		paths[0].bodies = append(paths[0].bodies, encoded)
		paths[1].bodies = append(paths[1].bodies, mustJSON(map[string]any{"inputs": []any{map[string]any{
			"name": "image", "shape": []int{1}, "datatype": "BYTES", "data": []string{base64.StdEncoding.EncodeToString(encoded)}}}}))
		paths[2].bodies = append(paths[2].bodies, mustJSON(map[string]any{"inputs": []any{map[string]any{
			"name": "input", "shape": []int{1, pre.Channels, pre.Height, pre.Width}, "datatype": "FP32", "data": pre.Image(img)}}}))
	}
	client := &http.Client{}
	load0 := loadAverage()
	for i := range *warmup + *requests {
		for _, p := range paths {
			body := p.bodies[i%len(p.bodies)]
			start := time.Now()
			resp, err := client.Post(p.url, p.contentType, bytes.NewReader(body))
			if err != nil {
				log.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				log.Fatalf("%s: %d %s", p.name, resp.StatusCode, b)
			}
			if i >= *warmup {
				p.took = append(p.took, time.Since(start))
			}
		}
	}
	fmt.Printf("model %s; %d requests per path, one at a time, interleaved; GOMAXPROCS %d, %s\n", *model, *requests, runtime.GOMAXPROCS(0), cpuModel())
	fmt.Printf("load average before %s, after %s\n", load0, loadAverage())
	fmt.Printf("%-30s %10s %10s %10s %10s %8s\n", "path", "p50", "p90", "p99", "mean", "body")
	for _, p := range paths {
		slices.Sort(p.took)
		var sum time.Duration
		for _, d := range p.took {
			sum += d
		}
		q := func(f float64) time.Duration { return p.took[min(len(p.took)-1, int(f*float64(len(p.took))))] }
		fmt.Printf("%-30s %10v %10v %10v %10v %7dB\n", p.name, q(0.5).Round(time.Microsecond), q(0.9).Round(time.Microsecond),
			q(0.99).Round(time.Microsecond), (sum / time.Duration(len(p.took))).Round(time.Microsecond), len(p.bodies[0]))
	}
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
