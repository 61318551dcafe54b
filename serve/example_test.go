package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/testmodel/small"
	"github.com/bicyc/bicyc/serve"
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
