// Command serve measures bicyc's HTTP and gRPC paths on one machine, in
// one process: POST /v1/classify (the raw PNG as the body) and the Open
// Inference Protocol's POST /v2/models/{name}/infer with the images as a
// BYTES tensor and preprocessed as an FP32 tensor, each as JSON (images
// base64) and as Triton's binary tensor data (the distances answered as
// binary data too), and the protocol's gRPC ModelInfer with the same
// tensors as raw_input_contents (the distances answered as
// raw_output_contents), as Triton's gRPC clients send them. It serves the
// model with package serve on loopback listeners and sends the requests one at a time, the paths interleaved
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
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/testmodel/small"
	"github.com/bicyc/bicyc/serve"
	"github.com/bicyc/bicyc/serve/oippb"
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
// with its headers), or its gRPC client and messages, and the time each
// measured request took.
type path struct {
	name, url string
	bodies    []request
	rpc       oippb.GRPCInferenceServiceClient
	messages  []*oippb.ModelInferRequest
	took      []time.Duration
}

// size is the bytes of the path's first request on the wire (a gRPC
// message without its 5-byte frame header).
func (p *path) size() int {
	if p.rpc != nil {
		return proto.Size(p.messages[0])
	}
	return len(p.bodies[0].body)
}

type request struct {
	body   []byte
	header http.Header
}

// send posts one request and checks it succeeds.
func (p *path) send(client *http.Client, i int) (time.Duration, error) {
	if p.rpc != nil {
		start := time.Now()
		if _, err := p.rpc.ModelInfer(context.Background(), p.messages[i%len(p.messages)]); err != nil {
			return 0, fmt.Errorf("%s: %w", p.name, err)
		}
		return time.Since(start), nil
	}
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
	pngs, tensors, chw, err := testInputs(o)
	if err != nil {
		return err
	}
	srv, err := startServers(o.model)
	if err != nil {
		return err
	}
	defer srv.close()
	enc := encoder{chw: chw}
	single := singlePaths(srv, enc, pngs[:64], tensors[:64])
	batched := batchedPaths(srv, enc, pngs[:o.batch], tensors[:o.batch])
	client := &http.Client{}
	load0 := loadAverage()
	if err := measure(client, single, o.warmup, o.requests); err != nil {
		return err
	}
	if err := measure(client, batched, 1, o.batches); err != nil {
		return err
	}
	fmt.Fprintf(w, "model %s; one request at a time, paths interleaved; GOMAXPROCS %d, %s\n", o.model, runtime.GOMAXPROCS(0), cpuModel())
	fmt.Fprintf(w, "load average before %s, after %s\n\n", load0, loadAverage())
	printSingle(w, o.requests, single)
	printBatched(w, o.batch, o.batches, batched)
	return nil
}

// testInputs returns max(64, o.batch) Fashion-MNIST test images as PNG files and as the tensors the
// model's manifest preprocesses them into, and the tensors' channels, height and width.
func testInputs(o options) (pngs [][]byte, tensors [][]float32, chw [3]int, err error) {
	fm := data.FashionMNISTDir
	test, err := data.LoadIDX(fm+"/t10k-images-idx3-ubyte.gz", fm+"/t10k-labels-idx1-ubyte.gz")
	if err != nil {
		return nil, nil, chw, err
	}
	c, err := infer.Open(context.Background(), o.model, infer.WithProvider(infer.ProviderCPU))
	if err != nil {
		return nil, nil, chw, err
	}
	pre := c.Manifest().Preprocess
	c.Close()
	for i := range max(64, o.batch) {
		img := &image.Gray{Pix: test.Image(i), Stride: test.Width, Rect: image.Rect(0, 0, test.Width, test.Height)}
		pngs = append(pngs, testPNG(img))
		tensors = append(tensors, pre.Image(img))
	}
	return pngs, tensors, [3]int{pre.Channels, pre.Height, pre.Width}, nil
}

// servers are the model served over HTTP (httptest) and gRPC on loopback, and a gRPC client of it.
type servers struct {
	s        *serve.Server
	ts       *httptest.Server
	gs       *grpc.Server
	conn     *grpc.ClientConn
	rpc      oippb.GRPCInferenceServiceClient
	inferURL string // the protocol's REST infer URL of model "m"
}

// startServers serves model as "m".
func startServers(model string) (_ *servers, err error) {
	srv := &servers{}
	defer func() {
		if err != nil {
			srv.close()
		}
	}()
	srv.s, err = serve.New(context.Background(), serve.Config{Model: model, ModelName: "m",
		Options: []infer.Option{infer.WithProvider(infer.ProviderCPU), infer.WithThreads(1)},
		MaxBody: 64 << 20, MaxConcurrent: 2, QueueTimeout: time.Minute})
	if err != nil {
		return nil, err
	}
	srv.ts = httptest.NewServer(srv.s.Public)
	srv.inferURL = srv.ts.URL + "/v2/models/m/infer"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv.gs = srv.s.NewGRPC(serve.Timeouts{Read: time.Minute, Write: time.Minute}, false)
	go srv.gs.Serve(ln)
	srv.conn, err = grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		return nil, err
	}
	srv.rpc = oippb.NewGRPCInferenceServiceClient(srv.conn)
	return srv, nil
}

// close stops what startServers started, in reverse order.
func (srv *servers) close() {
	if srv.conn != nil {
		srv.conn.Close()
	}
	if srv.gs != nil {
		srv.gs.Stop()
	}
	if srv.ts != nil {
		srv.ts.Close()
	}
	if srv.s != nil {
		srv.s.Close()
	}
}

// singlePaths are the batch-1 paths, each with one request per image.
func singlePaths(srv *servers, enc encoder, pngs [][]byte, tensors [][]float32) []*path {
	single := []*path{
		{name: "v1 /v1/classify (PNG body)", url: srv.ts.URL + "/v1/classify"},
		{name: "v2 JSON BYTES (base64 PNG)", url: srv.inferURL},
		{name: "v2 binary BYTES (PNG)", url: srv.inferURL},
		{name: "v2 JSON FP32 [1,C,H,W]", url: srv.inferURL},
		{name: "v2 binary FP32 [1,C,H,W]", url: srv.inferURL},
		{name: "gRPC raw BYTES (PNG)", rpc: srv.rpc},
		{name: "gRPC raw FP32 [1,C,H,W]", rpc: srv.rpc},
	}
	for i := range pngs {
		single[0].bodies = append(single[0].bodies, request{pngs[i], http.Header{"Content-Type": {"image/png"}}})
		single[1].bodies = append(single[1].bodies, enc.jsonImages(pngs[i:i+1]))
		single[2].bodies = append(single[2].bodies, enc.binaryImages(pngs[i:i+1]))
		single[3].bodies = append(single[3].bodies, enc.jsonTensor(tensors[i:i+1]))
		single[4].bodies = append(single[4].bodies, enc.binaryTensor(tensors[i:i+1]))
		single[5].messages = append(single[5].messages, enc.grpcImages(pngs[i:i+1]))
		single[6].messages = append(single[6].messages, enc.grpcTensor(tensors[i:i+1]))
	}
	return single
}

// batchedPaths are the throughput paths, each one request of all the images.
func batchedPaths(srv *servers, enc encoder, pngs [][]byte, tensors [][]float32) []*path {
	n := len(pngs)
	return []*path{
		{name: fmt.Sprintf("v2 JSON BYTES [%d]", n), url: srv.inferURL, bodies: []request{enc.jsonImages(pngs)}},
		{name: fmt.Sprintf("v2 binary BYTES [%d]", n), url: srv.inferURL, bodies: []request{enc.binaryImages(pngs)}},
		{name: fmt.Sprintf("v2 JSON FP32 [%d,C,H,W]", n), url: srv.inferURL, bodies: []request{enc.jsonTensor(tensors)}},
		{name: fmt.Sprintf("v2 binary FP32 [%d,C,H,W]", n), url: srv.inferURL, bodies: []request{enc.binaryTensor(tensors)}},
		{name: fmt.Sprintf("gRPC raw BYTES [%d]", n), rpc: srv.rpc, messages: []*oippb.ModelInferRequest{enc.grpcImages(pngs)}},
		{name: fmt.Sprintf("gRPC raw FP32 [%d,C,H,W]", n), rpc: srv.rpc, messages: []*oippb.ModelInferRequest{enc.grpcTensor(tensors)}},
	}
}

// measure sends warmup then count requests on every path, the paths interleaved request by request, and
// keeps the times of the counted ones.
func measure(client *http.Client, paths []*path, warmup, count int) error {
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

// printSingle prints the batch-1 table: latency quantiles and mean.
func printSingle(w io.Writer, requests int, single []*path) {
	fmt.Fprintf(w, "batch 1, %d requests per path:\n", requests)
	fmt.Fprintf(w, "%-30s %10s %10s %10s %10s %9s\n", "path", "p50", "p90", "p99", "mean", "body")
	for _, p := range single {
		slices.Sort(p.took)
		q := func(f float64) time.Duration { return p.took[min(len(p.took)-1, int(f*float64(len(p.took))))] }
		fmt.Fprintf(w, "%-30s %10v %10v %10v %10v %8dB\n", p.name, q(0.5).Round(time.Microsecond), q(0.9).Round(time.Microsecond),
			q(0.99).Round(time.Microsecond), mean(p.took).Round(time.Microsecond), p.size())
	}
}

// printBatched prints the throughput table: median, mean and images per second.
func printBatched(w io.Writer, n, batches int, batched []*path) {
	fmt.Fprintf(w, "\nbatch %d, %d requests per path:\n", n, batches)
	fmt.Fprintf(w, "%-30s %10s %10s %12s %11s\n", "path", "p50", "mean", "images/s", "body")
	for _, p := range batched {
		slices.Sort(p.took)
		fmt.Fprintf(w, "%-30s %10v %10v %12.0f %10dB\n", p.name, p.took[len(p.took)/2].Round(time.Microsecond), mean(p.took).Round(time.Microsecond),
			float64(n)/mean(p.took).Seconds(), p.size())
	}
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
