package serve

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/imaging"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/internal/jpegbomb"
)

// TestClassifyChunks: a batch of more than infer.RunBatch images runs in even
// runs of infer.RunBatch/2 to infer.RunBatch images (never fewer than
// infer.ShortlistMaxBatch), and the answers are those of one run.
func TestClassifyChunks(t *testing.T) {
	dir, test := testModel(t)
	ref := openReference(t, dir)
	const n = 2*infer.RunBatch + 2
	inputs := make([]infer.Input, n)
	for i := range inputs {
		in, err := ref.Prepare(fashionImage(test, i))
		if err != nil {
			t.Fatal(err)
		}
		inputs[i] = in
	}
	want, err := ref.ClassifyInputs(context.Background(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	var runs []int
	got, err := infer.ClassifyRuns(context.Background(), n, func(lo, hi int) ([]infer.Input, error) {
		return inputs[lo:hi], nil
	}, func(ctx context.Context, in []infer.Input) ([]infer.Result, error) {
		runs = append(runs, len(in))
		return ref.ClassifyInputs(ctx, in)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || runs[0] < infer.ShortlistMaxBatch || runs[0] < infer.RunBatch/2 || runs[2] > infer.RunBatch {
		t.Errorf("runs of %v images, want three of %d to %d", runs, infer.RunBatch/2, infer.RunBatch)
	}
	for i := range want {
		if !equalResults(got[i], want[i]) {
			t.Fatalf("image %d: %+v, want %+v as in one run", i, got[i], want[i])
		}
	}
}

// TestV2BatchOverLimit: a request of more images than the memory limit per
// request allows (1x1 GIFs filling a body: their answers would take more
// than BatchBodies x MaxBody) is refused with 413 naming the limit and the
// most images a request may send, before any image is decoded; that many
// valid images are answered, one more is refused.
func TestV2BatchOverLimit(t *testing.T) {
	dir, test := testModel(t)
	cfg := testConfig(dir)
	cfg.MaxBody = 256 << 10
	ts := httptest.NewServer(newTestServer(t, cfg).Public)
	defer ts.Close()
	var tiny bytes.Buffer
	if err := gif.Encode(&tiny, image.NewPaletted(image.Rect(0, 0, 1, 1), color.Palette{color.Gray{128}}), nil); err != nil {
		t.Fatal(err)
	}
	item := base64.StdEncoding.EncodeToString(tiny.Bytes())
	n := (int(cfg.MaxBody) - 200) / (len(item) + 3)
	items := make([]string, n)
	for i := range items {
		items[i] = item
	}
	url := ts.URL + "/v2/models/bicyc/infer"
	start := time.Now()
	code, ans := postInfer(t, url, map[string]any{"inputs": []any{map[string]any{"name": "image", "shape": []int{n}, "datatype": "BYTES", "data": items}}})
	t.Logf("%d images: %d %s in %v", n, code, ans.Error, time.Since(start))
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(ans.Error, "limit of 1 MiB per request") {
		t.Errorf("%d images: %d %q, want 413 naming the limit", n, code, ans.Error)
	}
	// The most images the answer names are answered; one more is not.
	var most int
	if _, err := fmt.Sscanf(ans.Error[strings.LastIndex(ans.Error, "send at most "):], "send at most %d images", &most); err != nil || most < 2 {
		t.Fatalf("%q names no number of images (%v)", ans.Error, err)
	}
	valid := base64.StdEncoding.EncodeToString(encodePNG(t, fashionImage(test, 0)))
	for _, count := range []int{most, most + 1} {
		items := slices.Repeat([]string{valid}, count)
		code, ans = postInfer(t, url, map[string]any{"inputs": []any{map[string]any{"name": "image", "shape": []int{count}, "datatype": "BYTES", "data": items}}})
		if want := map[bool]int{true: http.StatusOK, false: http.StatusRequestEntityTooLarge}[count == most]; code != want {
			t.Errorf("%d images (the most allowed: %d): %d %q, want %d", count, most, code, ans.Error, want)
		}
	}
}

// TestScanBombRefused: a progressive 4096x4096 JPEG of 6000 repeated scans
// (about 240 KB; half a minute or more to decode without a budget) is
// refused with 413 on /v1/classify and in a v2 BYTES tensor in well under
// a second, and while two clients send such bombs without pause, a valid
// request keeps getting its answer.
func TestScanBombRefused(t *testing.T) {
	dir, test := testModel(t)
	cfg := testConfig(dir)
	cfg.MaxConcurrent = 2
	ts := httptest.NewServer(newTestServer(t, cfg).Public)
	defer ts.Close()
	bomb := jpegbomb.Progressive(4096, 6000)
	v2Body, err := json.Marshal(map[string]any{"inputs": []any{map[string]any{"name": "image", "shape": []int{1}, "datatype": "BYTES",
		"data": []string{base64.StdEncoding.EncodeToString(bomb)}}}})
	if err != nil {
		t.Fatal(err)
	}
	send := func(path, contentType string, body []byte) (int, string, time.Duration) {
		start := time.Now()
		resp, err := http.Post(ts.URL+path, contentType, bytes.NewReader(body))
		if err != nil {
			return 0, err.Error(), time.Since(start)
		}
		defer resp.Body.Close()
		var ans struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&ans)
		return resp.StatusCode, ans.Error, time.Since(start)
	}
	for _, c := range []struct{ path, contentType string }{{"/v1/classify", "image/jpeg"}, {"/v2/models/bicyc/infer", "application/json"}} {
		body := bomb
		if c.contentType == "application/json" {
			body = v2Body
		}
		code, msg, took := send(c.path, c.contentType, body)
		t.Logf("%s: %d %s in %v", c.path, code, msg, took)
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "scans") {
			t.Errorf("%s: %d %q, want 413 naming the scans", c.path, code, msg)
		}
		if took > 500*time.Millisecond {
			t.Errorf("%s: answered in %v, want well under a second", c.path, took)
		}
	}

	valid := encodePNG(t, fashionImage(test, 0))
	stop := make(chan struct{})
	var bombs, slowest atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, msg, took := send("/v1/classify", "image/jpeg", bomb)
				if code != http.StatusRequestEntityTooLarge {
					t.Errorf("bomb: %d %q", code, msg)
				}
				bombs.Add(1)
				slowest.Store(max(slowest.Load(), int64(took)))
			}
		}()
	}
	for i := range 20 {
		if code, msg, _ := send("/v1/classify", "image/png", valid); code != http.StatusOK {
			t.Errorf("valid request %d while bombs are sent: %d %q", i, code, msg)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("20 valid requests answered while %d bombs were refused, the slowest in %v", bombs.Load(), time.Duration(slowest.Load()))
	if time.Duration(slowest.Load()) > time.Second {
		t.Errorf("a bomb took %v to refuse", time.Duration(slowest.Load()))
	}
}

// TestClientGoneStopsDecoding: a client that leaves while its image is
// decoded (a JPEG within the budget, of a second or so of work) frees its
// slot within a fraction of the decoding time: the decoder stops with the
// request's context.
func TestClientGoneStopsDecoding(t *testing.T) {
	dir, _ := testModel(t)
	cfg := testConfig(dir)
	cfg.MaxBody = 1 << 20
	s := newTestServer(t, cfg)
	ts := httptest.NewServer(s.Public)
	defer ts.Close()
	heavy := jpegbomb.Progressive(4096, 30) // 31 scans: within the budget
	start := time.Now()
	if _, _, err := imaging.DecodeImage(bytes.NewReader(heavy), imaging.MaxImagePixels); err != nil {
		t.Fatal(err)
	}
	full := time.Since(start)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/classify", bytes.NewReader(heavy))
	if err != nil {
		t.Fatal(err)
	}
	go http.DefaultClient.Do(req)
	for len(s.slots) == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	start = time.Now()
	for len(s.slots) > 0 {
		time.Sleep(time.Millisecond)
	}
	freed := time.Since(start)
	t.Logf("decoding takes %v; the slot was free %v after the client left", full, freed)
	if freed > full/2 {
		t.Errorf("slot freed %v after the client left, the decoding takes %v: it was not stopped", freed, full)
	}
}

// TestBatchBytesEstimate: the estimate admission refuses batches by
// (batchBytes) covers what a request's answers allocate, from the results
// as infer returns them (a Prediction per class) through oipOutputs to the
// JSON response, for a model of 1000 classes (measured: about 106 bytes
// per image and class against the estimate's 128).
func TestBatchBytesEstimate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates more than the server does")
	}
	dir, _ := testModel(t)
	ref := openReference(t, dir)
	const n, k = 300, 1000
	classes := make([]bundle.Class, k)
	column := map[int]int{}
	for i := range classes {
		classes[i] = bundle.Class{ID: i, Name: fmt.Sprintf("class-%04d", i)}
		column[i] = i
	}
	v := &version{number: 1, model: ref, classes: classes, column: column}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	results := make([]infer.Result, n)
	for i := range results {
		p := make([]infer.Prediction, k)
		for j := range p {
			p[j] = infer.Prediction{ClassID: j, Name: classes[j].Name, Distance: float32(i*k+j) * 1.2345678}
		}
		results[i] = infer.Result{Predictions: p, UnknownScore: 1.5}
	}
	req := &oipRequest{Inputs: []oipTensor{{Name: inputImage}}}
	outputs, err := oipOutputs(req, v, results)
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	writeInferResponse(w, req, &oipResponse{ModelName: "m", ModelVersion: "1", Outputs: outputs})
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(results)
	perImage := int64(after.TotalAlloc-before.TotalAlloc) / n
	estimate := batchBytes(n, k, 0) / n
	t.Logf("%d classes: %d bytes allocated per image (%.0f per class), estimate %d", k, perImage, float64(perImage)/k, estimate)
	if perImage > estimate {
		t.Errorf("answers allocate %d bytes per image, more than the estimate of %d", perImage, estimate)
	}
}
