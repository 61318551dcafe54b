package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/testmodel/small"
	"github.com/bicyc/bicyc/serve"
	"github.com/bicyc/bicyc/serve/oippb"
)

// Example mounts bicyc's public API under /bicyc/ in a service's own mux,
// beside the service's other routes, and reads the Open Inference
// Protocol's model metadata through it.
func Example() {
	dir, err := small.Dir() // a model directory exported by bicyc
	if err != nil {
		log.Fatal(err)
	}
	s, err := serve.New(context.Background(), serve.Config{
		Model: dir, ModelName: "shirts",
		Options: []infer.Option{infer.WithProvider(infer.ProviderCPU)},
		MaxBody: 32 << 20, MaxConcurrent: 2, QueueTimeout: 2 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	mux := http.NewServeMux()
	mux.Handle("/bicyc/", http.StripPrefix("/bicyc", s.Public))
	mux.HandleFunc("/hello", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "hello") })
	// s.Admin (reload, the repository API) belongs on a listener of its own.
	service := httptest.NewServer(mux)
	defer service.Close()

	resp, err := http.Get(service.URL + "/bicyc/v2/models/shirts")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var meta struct {
		Name     string
		Versions []string
		Inputs   []struct {
			Name, Datatype string
			Shape          []int
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&meta); err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.StatusCode, meta.Name, meta.Versions)
	for _, in := range meta.Inputs {
		fmt.Println(in.Name, in.Datatype, in.Shape)
	}
	// Output:
	// 200 shirts [1]
	// image BYTES [-1]
	// input FP32 [-1 1 28 28]
}

// ExampleServer_NewGRPC serves the Open Inference Protocol's gRPC API on a
// loopback listener and reads the model metadata with a client generated
// from the protocol's schema (package oippb).
func ExampleServer_NewGRPC() {
	dir, err := small.Dir()
	if err != nil {
		log.Fatal(err)
	}
	s, err := serve.New(context.Background(), serve.Config{
		Model: dir, ModelName: "shirts",
		Options: []infer.Option{infer.WithProvider(infer.ProviderCPU)},
		MaxBody: 32 << 20, MaxConcurrent: 2, QueueTimeout: 2 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := s.NewGRPC(serve.Timeouts{Read: 10 * time.Second, Write: time.Minute}, false)
	go srv.Serve(ln)
	defer srv.GracefulStop()

	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	meta, err := oippb.NewGRPCInferenceServiceClient(conn).ModelMetadata(context.Background(), &oippb.ModelMetadataRequest{Name: "shirts"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(meta.Name, meta.Versions)
	for _, in := range meta.Inputs {
		fmt.Println(in.Name, in.Datatype, in.Shape)
	}
	// Output:
	// shirts [1]
	// image BYTES [-1]
	// input FP32 [-1 1 28 28]
}
