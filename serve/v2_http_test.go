package serve

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bicyc/bicyc/infer"
)

// The REST transport's own checks, beyond the conformance cases: the
// binary tensor data extension's framing (extension_binary_data.md) with
// JSON and binary mixed and every length checked, the error object on
// every failure, extensions advertised only where they answer, and the
// statistics equal to /metrics.

// binaryRequest frames a JSON request and binary data as the extension
// says: the JSON, then the binary data, its length in the header.
func binaryRequest(t *testing.T, url string, head string, tail []byte, contentType string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, bytes.NewReader(append([]byte(head), tail...)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Inference-Header-Content-Length", strconv.Itoa(len(head)))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func fp32Bytes(xs []float32) []byte {
	var out []byte
	for _, x := range xs {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(x))
	}
	return out
}

func bytesElements(items ...[]byte) []byte {
	var out []byte
	for _, b := range items {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return out
}

// TestV2BinaryMixed sends JSON and binary tensors mixed as Triton's clients
// do: a binary input with JSON outputs, a JSON input with one binary
// output, and binary_data_output overridden by an output's binary_data.
func TestV2BinaryMixed(t *testing.T) {
	url, _ := v2Server(t)
	inferURL := url + "/v2/models/fmnist/infer"
	f := newConfFixture(t, map[string]string{"1": refDir(t)})
	want, _ := f.want(t, "1")

	// Binary input, outputs as JSON (no binary_data asked for).
	head := `{"inputs": [{"name": "image", "shape": [2], "datatype": "BYTES", "parameters": {"binary_data_size": ` +
		strconv.Itoa(len(bytesElements(f.pngs[:2]...))) + `}}], "outputs": [{"name": "distance"}]}`
	code, h, body := binaryRequest(t, inferURL, head, bytesElements(f.pngs[:2]...), "")
	a := decodeAnswer(t, code, h, body)
	if code != 200 || h.Get("Inference-Header-Content-Length") != "" || h.Get("Content-Type") != "application/json" || !closeTo(a.output(t, "distance").fp32, want[:6]) {
		t.Errorf("binary input, JSON output: %d %v %+v", code, h, a)
	}

	// JSON input, distance binary and unknown as JSON.
	req := fmt.Sprintf(`{"inputs": [{"name": "image", "shape": [1], "datatype": "BYTES", "data": [%q]}],
		"outputs": [{"name": "distance", "parameters": {"binary_data": true}}, {"name": "unknown"}]}`, b64(f.pngs[0]))
	resp, err := http.Post(inferURL, "application/json", strings.NewReader(req))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	a = decodeAnswer(t, resp.StatusCode, resp.Header, body)
	n, _ := strconv.Atoi(resp.Header.Get("Inference-Header-Content-Length"))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/octet-stream" || len(body)-n != 12 ||
		!closeTo(a.output(t, "distance").fp32, want[:3]) || fmt.Sprint(a.output(t, "unknown").bools) != "[false]" ||
		!strings.Contains(string(body[:n]), `"unknown","datatype":"BOOL","shape":[1],"data":[false]`) {
		t.Errorf("JSON input, mixed outputs: %d %v %q", resp.StatusCode, resp.Header, body)
	}

	// binary_data_output for all, but unknown_score overridden to JSON;
	// an FP32 input as binary data.
	head = `{"parameters": {"binary_data_output": true}, "inputs": [{"name": "input", "shape": [1, 1, 28, 28], "datatype": "FP32", "parameters": {"binary_data_size": 3136}}],
		"outputs": [{"name": "distance"}, {"name": "unknown_score", "parameters": {"binary_data": false}}, {"name": "distance", "parameters": {"classification": 1}}]}`
	code, h, body = binaryRequest(t, url+"/v2/models/fmnist/versions/1/infer", head, fp32Bytes(f.tensors[:784]), "application/octet-stream")
	a = decodeAnswer(t, code, h, body)
	n, _ = strconv.Atoi(h.Get("Inference-Header-Content-Length"))
	if code != 200 || !closeTo(a.output(t, "distance").fp32, want[:3]) || !strings.Contains(string(body[:n]), `"name":"unknown_score","datatype":"FP32","shape":[1],"data":[`) {
		t.Errorf("binary_data_output with an override: %d %q", code, body)
	}
}

// refDir is the test model's directory.
func refDir(t *testing.T) string {
	dir, _ := testModel(t)
	return dir
}

// TestV2BinaryLengths checks that every length of binary tensor data is
// checked against the header, the other lengths and the declared shape,
// each refused with a 4xx error object naming the problem.
func TestV2BinaryLengths(t *testing.T) {
	url, _ := v2Server(t)
	inferURL := url + "/v2/models/fmnist/infer"
	f := newConfFixture(t, map[string]string{"1": refDir(t)})
	tensor := fp32Bytes(f.tensors[:784])
	input := func(size int) string {
		return fmt.Sprintf(`{"inputs": [{"name": "input", "shape": [1, 1, 28, 28], "datatype": "FP32", "parameters": {"binary_data_size": %d}}]}`, size)
	}
	images := func(size int) string {
		return fmt.Sprintf(`{"inputs": [{"name": "image", "shape": [2], "datatype": "BYTES", "parameters": {"binary_data_size": %d}}]}`, size)
	}
	twoImages := bytesElements(f.pngs[:2]...)
	for i, c := range []struct {
		head        string
		header      string // the Inference-Header-Content-Length, if not the head's length
		tail        []byte
		contentType string
		status      int
		has         string
	}{
		{input(3136), "", tensor, "", 200, ""},
		{`{"inputs": [{"name": "input", "shape": [1, 1, 28, 28], "datatype": "FP32", "data": null, "parameters": {"binary_data_size": 3136}}]}`, "", tensor, "application/json", 200, ""},
		{input(3136), "99999", tensor, "", 400, "Inference-Header-Content-Length"},
		{input(3136), "-1", tensor, "", 400, "Inference-Header-Content-Length"},
		{input(3136), "ten", tensor, "", 400, "Inference-Header-Content-Length"},
		{input(3136), "", tensor[:3000], "", 400, "binary_data_size 3136"},
		{input(3132), "", tensor[:3132], "", 400, "takes 3136 bytes"},
		{input(3136), "", append(bytes.Clone(tensor), 0, 0, 0, 0), "", 400, "3140 bytes of binary data"},
		{input(-4), "", tensor, "", 400, "binary_data_size -4"},
		{`{"inputs": [{"name": "input", "shape": [1, 1, 28, 28], "datatype": "FP32", "parameters": {"binary_data_size": "3136"}}]}`, "", tensor, "", 400, "binary_data_size 3136"},
		{`{"inputs": [{"name": "input", "shape": [1, 1, 28, 28], "datatype": "FP32", "data": [1], "parameters": {"binary_data_size": 3136}}]}`, "", tensor, "", 400, "both data and a binary_data_size"},
		{input(3136), "", tensor, "text/plain", 415, "application/octet-stream"},
		{images(len(twoImages)), "", twoImages, "", 200, ""},
		{images(len(twoImages) - 1), "", twoImages[:len(twoImages)-1], "", 400, "element 1 declares"},
		{images(len(twoImages) + 2), "", append(bytes.Clone(twoImages), 0, 0), "", 400, "want a 4-byte length"},
		{images(len(twoImages) + 4), "", append(bytes.Clone(twoImages), 0, 0, 0, 0), "", 400, "more than the 2 elements"},
		{images(len(twoImages[:4+len(f.pngs[0])])), "", twoImages[:4+len(f.pngs[0])], "", 400, "has 1 elements, its shape [2] says 2"},
		{`{"inputs": [{"name": "image", "shape": [1], "datatype": "BYTES", "data": ["x"]}], "outputs": [{"name": "distance", "parameters": {"binary_data": "yes"}}]}`, "", nil, "", 400, "binary_data yes"},
		{`{"parameters": {"binary_data_output": 1}, "inputs": [{"name": "image", "shape": [1], "datatype": "BYTES", "data": ["x"]}]}`, "", nil, "", 400, "binary_data_output 1"},
	} {
		req, err := http.NewRequest("POST", inferURL, bytes.NewReader(append([]byte(c.head), c.tail...)))
		if err != nil {
			t.Fatal(err)
		}
		header := c.header
		if header == "" {
			header = strconv.Itoa(len(c.head))
		}
		req.Header.Set("Inference-Header-Content-Length", header)
		if c.contentType != "" {
			req.Header.Set("Content-Type", c.contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct{ Error string }
		if resp.StatusCode != c.status || c.status != 200 && (json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error, c.has)) {
			t.Errorf("case %d: %d %q, want %d and an error naming %q", i, resp.StatusCode, body, c.status, c.has)
		}
	}
	// A binary_data_size without the header.
	code, ans := call(t, "POST", inferURL, "application/json", []byte(input(3136)))
	if msg, _ := ans["error"].(string); code != 400 || !strings.Contains(msg, "no Inference-Header-Content-Length") {
		t.Errorf("binary_data_size without the header: %d %v", code, ans)
	}
}

// TestV2LyingShape sends requests of about 100 bytes declaring a
// [40000, 1, 28, 28] FP32 tensor (125 MB of values), as JSON and as binary
// data, to a server whose body limit (the serve command's default, 32 MiB)
// admits that many elements: each is refused before anything is sized from
// the shape. The bytes allocated per request are measured in process
// (runtime.MemStats.TotalAlloc) and the resident set logged around eight
// of them at once.
func TestV2LyingShape(t *testing.T) {
	dir, _ := testModel(t)
	cfg := testConfig(dir)
	cfg.MaxBody, cfg.MaxBuffered = 32<<20, 128<<20
	s := newTestServer(t, cfg)
	binaryHead := `{"inputs":[{"name":"input","shape":[40000,1,28,28],"datatype":"FP32","parameters":{"binary_data_size":4}}]}`
	bodies := map[string]struct {
		body   string
		header string
	}{
		"json":   {`{"inputs":[{"name":"input","shape":[40000,1,28,28],"datatype":"FP32","data":[0.5]}]}`, ""},
		"binary": {binaryHead + "\x00\x00\x00\x3f", strconv.Itoa(len(binaryHead))},
	}
	send := func(name string) *httptest.ResponseRecorder {
		b := bodies[name]
		req := httptest.NewRequest("POST", "/v2/models/bicyc/infer", strings.NewReader(b.body))
		if b.header != "" {
			req.Header.Set("Inference-Header-Content-Length", b.header)
		}
		rec := httptest.NewRecorder()
		s.Public.ServeHTTP(rec, req)
		return rec
	}
	for name, b := range bodies {
		send(name) // warm up lazily made state
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rec := send(name)
		runtime.ReadMemStats(&after)
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d-byte body declaring [40000,1,28,28]: %d %s; %d bytes allocated", name, len(b.body), rec.Code, bytes.TrimSpace(rec.Body.Bytes()), allocated)
		// Measured: about 105 KiB (the body buffer's first 64 KiB, a 32 KiB
		// read chunk, JSON and HTTP machinery); the shape's
		// values would be 125 MB.
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), `input \"input\"`) || allocated > 1<<20 {
			t.Errorf("%s: %d %s, %d bytes allocated; want 400 naming the input and at most 1 MiB", name, rec.Code, rec.Body, allocated)
		}
	}
	runtime.GC()
	rss := rssBytes(t, false)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			send([]string{"json", "binary"}[i%2])
		}()
	}
	wg.Wait()
	t.Logf("resident set around 8 such requests at once: %d MiB -> %d MiB", rss>>20, rssBytes(t, false)>>20)
}

// infScoreModel answers an unknown score of +Inf, as a calibrated model
// does for an input far outside its range (the 1e25 reproducer).
type infScoreModel struct{ model }

func (m infScoreModel) ClassifyInputs(ctx context.Context, inputs []infer.Input) ([]infer.Result, error) {
	results, err := m.model.ClassifyInputs(ctx, inputs)
	for i := range results {
		results[i].UnknownScore = math.Inf(1)
	}
	return results, err
}

// TestV2NonFiniteAnswers checks that an answer holding a score no JSON can
// carry is never a status without a body: a non-finite score from a
// client's input is a 400 naming the input, and a value that cannot be
// encoded a readable 500.
func TestV2NonFiniteAnswers(t *testing.T) {
	dir, _ := testModel(t)
	cfg := testConfig(dir)
	cfg.open = func(ctx context.Context, dir string) (model, error) {
		m, err := infer.Open(ctx, dir, append(cpuOptions, infer.WithTopK(100))...)
		return infScoreModel{m}, err
	}
	s := newTestServer(t, cfg)
	ts := httptest.NewServer(s.Public)
	defer ts.Close()
	f := newConfFixture(t, map[string]string{"1": dir})
	a := (&httpClient{url: ts.URL}).infer(t, "bicyc", "", confRequest{inputs: []confInput{{name: "input", datatype: "FP32", shape: []int64{1, 1, 28, 28}, fp32: f.tensors[:784]}}})
	if a.status != 400 || !strings.Contains(a.err, `input "input" image 0`) || !strings.Contains(a.err, "+Inf") {
		t.Errorf("infinite unknown score: %d %q, want 400 naming the input", a.status, a.err)
	}
	rec := httptest.NewRecorder()
	writeJSON(rec, http.StatusOK, map[string]float64{"x": math.NaN()})
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"error":"encoding the answer: json: unsupported value: NaN"`) {
		t.Errorf("unencodable answer: %d %q", rec.Code, rec.Body)
	}
}

// TestV2ErrorObjects checks that routes and methods the server does not
// have answer the protocol's error object too, on both listeners, and
// that the model repository extension is advertised only on the listener
// where its endpoints answer, for a repository.
func TestV2ErrorObjects(t *testing.T) {
	dir, _ := testModel(t)
	single := newTestServer(t, testConfig(dir))
	cfg := testConfig("")
	cfg.Model, cfg.Repository = "", testRepository(t)
	repo := newTestServer(t, cfg)
	for _, c := range []struct {
		h            http.Handler
		method, path string
		status       int
		has, allow   string
	}{
		{single.Public, "GET", "/v3/nothing", 404, "no endpoint /v3/nothing", ""},
		{single.Public, "GET", "/v2/models/bicyc/infer", 405, "takes POST", "POST"},
		{single.Public, "DELETE", "/v2", 405, "takes GET, HEAD", "GET, HEAD"},
		{single.Admin, "GET", "/admin/reload", 405, "takes POST", "POST"},
		{single.Admin, "GET", "/v2/models/bicyc", 404, "no endpoint", ""},
		{repo.Public, "POST", "/v2/repository/index", 404, "no endpoint", ""},
	} {
		rec := httptest.NewRecorder()
		c.h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		var e map[string]string
		if rec.Code != c.status || rec.Header().Get("Content-Type") != "application/json" || json.Unmarshal(rec.Body.Bytes(), &e) != nil ||
			!strings.Contains(e["error"], c.has) || rec.Header().Get("Allow") != c.allow {
			t.Errorf("%s %s: %d %v %q, want %d and an error naming %q", c.method, c.path, rec.Code, rec.Header(), rec.Body, c.status, c.has)
		}
	}
	for _, c := range []struct {
		h    http.Handler
		what string
		want bool
	}{{single.Public, "one model, public", false}, {single.Admin, "one model, admin", false}, {repo.Public, "repository, public", false}, {repo.Admin, "repository, admin", true}} {
		rec := httptest.NewRecorder()
		c.h.ServeHTTP(rec, httptest.NewRequest("GET", "/v2", nil))
		var meta struct{ Extensions []string }
		if err := json.Unmarshal(rec.Body.Bytes(), &meta); rec.Code != 200 || err != nil || slices.Contains(meta.Extensions, "model_repository") != c.want {
			t.Errorf("%s: %d %s, want model_repository advertised: %v", c.what, rec.Code, rec.Body, c.want)
		}
	}
}

// TestV2StatsAreMetrics checks that /metrics exports the statistics
// extension's counters: the same numbers.
func TestV2StatsAreMetrics(t *testing.T) {
	url, _ := v2Server(t)
	f := newConfFixture(t, map[string]string{"1": refDir(t)})
	c := &httpClient{url: url}
	for range 3 {
		c.infer(t, "fmnist", "", confRequest{inputs: []confInput{{name: "image", datatype: "BYTES", shape: []int64{2}, bytes: f.pngs[:2]}}})
	}
	c.infer(t, "fmnist", "", confRequest{inputs: []confInput{{name: "image", datatype: "BYTES", shape: []int64{1}, bytes: [][]byte{[]byte("no image")}}}})
	_, stats := c.stats(t, "fmnist", "1")
	metrics := get(t, url+"/metrics")
	for _, want := range []string{
		fmt.Sprintf(`bicyc_infer_inference_requests_total{model="fmnist",result="success",version="1"} %d`, stats[0].success[0]),
		fmt.Sprintf(`bicyc_infer_inference_requests_total{model="fmnist",result="fail",version="1"} %d`, stats[0].fail[0]),
		fmt.Sprintf(`bicyc_infer_inference_images_total{model="fmnist",version="1"} %d`, stats[0].inferenceCount),
		fmt.Sprintf(`bicyc_infer_inference_executions_total{model="fmnist",version="1"} %d`, stats[0].executionCount),
		`bicyc_infer_inference_seconds_total{model="fmnist",phase="compute_infer",version="1"} ` + strconv.FormatFloat(float64(stats[0].infer[1])/1e9, 'g', -1, 64),
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if stats[0].success[0] != 3 || stats[0].fail[0] != 1 || stats[0].inferenceCount != 6 {
		t.Errorf("stats %+v, want 3 successes of 6 images and 1 failure", stats[0])
	}
}

// FuzzV2InferBinary checks that no request with binary tensor data (a
// JSON part and any bytes after it) makes the handler panic or answer
// 500: every bad framing is the client's fault (4xx).
func FuzzV2InferBinary(f *testing.F) {
	dir, test := testModel(f)
	png := encodePNG(f, fashionImage(test, 0))
	image := bytesElements(png)
	f.Add(fmt.Sprintf(`{"inputs":[{"name":"image","shape":[1],"datatype":"BYTES","parameters":{"binary_data_size":%d}}],"outputs":[{"name":"distance","parameters":{"binary_data":true}}]}`, len(image)), image)
	f.Add(`{"inputs":[{"name":"image","shape":[2,1],"datatype":"BYTES","parameters":{"binary_data_size":8}}]}`, []byte{1, 0, 0, 0, 7, 255, 255, 255})
	f.Add(`{"inputs":[{"name":"input","shape":[40000,1,28,28],"datatype":"FP32","parameters":{"binary_data_size":4}}]}`, []byte{0, 0, 0, 63})
	f.Add(`{"parameters":{"binary_data_output":true},"inputs":[{"name":"input","shape":[1,1,2,2],"datatype":"FP32","parameters":{"binary_data_size":16}}]}`, make([]byte, 16))
	cfg := testConfig(dir)
	cfg.MaxPixels, cfg.MaxBody, cfg.MaxConcurrent = 1<<16, 1<<16, 2
	s := newTestServer(f, cfg)
	f.Fuzz(func(t *testing.T, head string, tail []byte) {
		req := httptest.NewRequest(http.MethodPost, "/v2/models/bicyc/infer", bytes.NewReader(append([]byte(head), tail...)))
		req.Header.Set("Inference-Header-Content-Length", strconv.Itoa(len(head)))
		rec := httptest.NewRecorder()
		s.Public.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && (rec.Code < 400 || rec.Code > 499) {
			t.Errorf("status %d: %s", rec.Code, rec.Body)
		}
	})
}
