package serve

import (
	"context"
	"image"
	"os"
	"testing"
	"time"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/testmodel/small"
)

// The tests serve a real exported model (package testmodel) through ONNX
// Runtime on the CPU.
func TestMain(m *testing.M) {
	code := m.Run()
	small.Cleanup()
	os.Exit(code)
}

func testModel(t testing.TB) (string, *data.Dataset) {
	t.Helper()
	return small.Get(t)
}

func fashionImage(d *data.Dataset, i int) image.Image { return small.FashionImage(d, i) }

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	return small.EncodePNG(t, img)
}

func equalResults(a, b infer.Result) bool { return small.EqualResults(a, b) }

// cpuOptions open models on the CPU, one thread per call, silently.
var cpuOptions = []infer.Option{infer.WithProvider(infer.ProviderCPU), infer.WithThreads(1), infer.WithLog(nil)}

// testConfig serves the model directory dir with small limits.
func testConfig(dir string) Config {
	return Config{Model: dir, Options: cpuOptions, MaxBody: 1 << 20, MaxConcurrent: 4, QueueTimeout: time.Second}
}

// testTimeouts are the connection limits of the tests' Serve calls, the
// serve command's defaults: the race detector on a loaded machine makes a
// request take seconds.
var testTimeouts = Timeouts{Read: 30 * time.Second, Write: 60 * time.Second, Shutdown: 5 * time.Second}

// newTestServer builds the server of cfg, closed when the test ends.
func newTestServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openReference opens the model in dir in this process, for the answers
// the server must give.
func openReference(t testing.TB, dir string) *infer.Classifier {
	t.Helper()
	c, err := infer.Open(context.Background(), dir, cpuOptions...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
