package serve

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/infer"
)

// The tests of the Open Inference Protocol send requests in the shapes of
// the specification's examples (kserve/open-inference-protocol,
// specification/protocol/inference_rest.md: health, metadata, the
// inference request with "id", "inputs" and "outputs") and of Triton's
// classification extension, with this model's tensors; the answers must
// have the specification's response shapes and bicyc's numbers.

// v2Server serves the test model as "fmnist" and returns its URL and a
// reference classifier that ranks every class.
func v2Server(t *testing.T) (string, *infer.Classifier) {
	t.Helper()
	dir, _ := testModel(t)
	cfg := testConfig(dir)
	cfg.ModelName = "fmnist"
	cfg.MaxBody = 256 << 10
	s := newTestServer(t, cfg)
	ts := httptest.NewServer(s.Public)
	t.Cleanup(ts.Close)
	ref, err := infer.Open(context.Background(), dir, append(cpuOptions, infer.WithTopK(100))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ref.Close() })
	return ts.URL, ref
}

// call sends a request and decodes the JSON answer into a generic value.
func call(t *testing.T, method, url, contentType string, body []byte) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: %d, body not a JSON object: %q", method, url, resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

// TestV2HealthAndMetadata checks the health, server metadata, model
// metadata and model ready endpoints, with and without a version, and
// their errors for a model or version not served.
func TestV2HealthAndMetadata(t *testing.T) {
	url, ref := v2Server(t)
	if code, body := call(t, "GET", url+"/v2/health/live", "", nil); code != 200 || body["live"] != true {
		t.Errorf("live: %d %v", code, body)
	}
	if code, body := call(t, "GET", url+"/v2/health/ready", "", nil); code != 200 || body["ready"] != true {
		t.Errorf("ready: %d %v", code, body)
	}
	code, body := call(t, "GET", url+"/v2", "", nil)
	if exts, _ := body["extensions"].([]any); code != 200 || body["name"] != "bicyc" || body["version"] == "" || !slices.Contains(exts, any("classification")) {
		t.Errorf("server metadata: %d %v", code, body)
	}
	for _, path := range []string{"/v2/models/fmnist", "/v2/models/fmnist/versions/1"} {
		code, meta := call(t, "GET", url+path, "", nil)
		if code != 200 || meta["name"] != "fmnist" || meta["platform"] != platform || fmt.Sprint(meta["versions"]) != "[1]" {
			t.Errorf("%s: %d %v", path, code, meta)
			continue
		}
		if got := fmt.Sprint(meta["inputs"]); got != "[map[datatype:BYTES name:image shape:[-1]] map[datatype:FP32 name:input shape:[-1 1 28 28]]]" {
			t.Errorf("%s: inputs %s", path, got)
		}
		if got := fmt.Sprint(meta["outputs"]); got != "[map[datatype:FP32 name:distance shape:[-1 3]] map[datatype:FP32 name:unknown_score shape:[-1]] map[datatype:BOOL name:unknown shape:[-1]]]" {
			t.Errorf("%s: outputs %s", path, got)
		}
		params, _ := meta["parameters"].(map[string]any)
		classes, _ := params["classes"].([]any)
		if len(classes) != len(ref.Classes()) {
			t.Fatalf("%s: parameters %v", path, params)
		}
		for i, c := range ref.Classes() {
			if got := fmt.Sprint(classes[i]); got != fmt.Sprintf("map[id:%d index:%d name:%s task:%d]", c.ID, i, c.Name, c.Task) {
				t.Errorf("%s: class %d is %s", path, i, got)
			}
		}
	}
	for _, path := range []string{"/v2/models/fmnist/ready", "/v2/models/fmnist/versions/1/ready"} {
		if code, body := call(t, "GET", url+path, "", nil); code != 200 || body["name"] != "fmnist" || body["ready"] != true {
			t.Errorf("%s: %d %v", path, code, body)
		}
	}
	for i, c := range []struct {
		path   string
		status int
		has    string
	}{
		{"/v2/models/other", 404, `model "other" is not served`},
		{"/v2/models/fmnist/versions/2", 404, "version 2 is not served"},
		{"/v2/models/fmnist/versions/v1", 400, `version "v1"`},
		{"/v2/models/other/ready", 404, "not served"},
		{"/v2/models/fmnist/versions/2/ready", 404, "not served"},
	} {
		code, body := call(t, "GET", url+c.path, "", nil)
		if msg, _ := body["error"].(string); code != c.status || !strings.Contains(msg, c.has) {
			t.Errorf("case %d %s: %d %v, want %d and an error naming %q", i, c.path, code, body, c.status, c.has)
		}
	}
}

// tensor is one output tensor of an answer.
type tensor struct {
	Name     string          `json:"name"`
	Datatype string          `json:"datatype"`
	Shape    []int64         `json:"shape"`
	Data     json.RawMessage `json:"data"`
}

// inferAnswer is the protocol's $inference_response.
type inferAnswer struct {
	ModelName    string   `json:"model_name"`
	ModelVersion string   `json:"model_version"`
	ID           string   `json:"id"`
	Outputs      []tensor `json:"outputs"`
	Error        string   `json:"error"`
}

func postInfer(t *testing.T, url string, req any) (int, inferAnswer) {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out inferAnswer
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("status %d, body not JSON: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

// distances returns the reference distances of imgs, [N, K] in class
// order.
func distances(t *testing.T, ref *infer.Classifier, encoded [][]byte) []float32 {
	t.Helper()
	k := len(ref.Classes())
	out := make([]float32, len(encoded)*k)
	for i, b := range encoded {
		res, err := ref.ClassifyReader(context.Background(), bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range res.Predictions {
			for col, c := range ref.Classes() {
				if c.ID == p.ClassID {
					out[i*k+col] = p.Distance
				}
			}
		}
	}
	return out
}

func closeTo(got, want []float32) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > 1e-5*max(1, math.Abs(float64(want[i]))) {
			return false
		}
	}
	return true
}

// TestV2InferImages sends two encoded images as a BYTES tensor, as the
// specification's example sends its inputs, and checks the answer's
// shape, id, version and distances against the library's; then the same
// images preprocessed, as a nested FP32 tensor; then the classification
// extension; then a request naming no outputs.
func TestV2InferImages(t *testing.T) {
	url, ref := v2Server(t)
	_, test := testModel(t)
	inferURL := url + "/v2/models/fmnist/infer"
	encoded := [][]byte{encodePNG(t, fashionImage(test, 11)), encodePNG(t, fashionImage(test, 12))}
	want := distances(t, ref, encoded)
	b64 := []string{base64.StdEncoding.EncodeToString(encoded[0]), base64.StdEncoding.EncodeToString(encoded[1])}

	code, ans := postInfer(t, inferURL, map[string]any{
		"id":      "42",
		"inputs":  []any{map[string]any{"name": "image", "shape": []int{2}, "datatype": "BYTES", "data": b64}},
		"outputs": []any{map[string]any{"name": "distance"}},
	})
	if code != 200 || ans.ID != "42" || ans.ModelName != "fmnist" || ans.ModelVersion != "1" || len(ans.Outputs) != 1 {
		t.Fatalf("BYTES images: %d %+v", code, ans)
	}
	var got []float32
	out := ans.Outputs[0]
	if err := json.Unmarshal(out.Data, &got); err != nil || out.Name != "distance" || out.Datatype != "FP32" || fmt.Sprint(out.Shape) != "[2 3]" || !closeTo(got, want) {
		t.Errorf("BYTES images: output %s %s %v %v (%v), want distances %v", out.Name, out.Datatype, out.Shape, got, err, want)
	}

	// The same images preprocessed by the client, as a nested [2,1,28,28]
	// array (the specification allows nested or flat data).
	m := ref.Manifest()
	var nested [][][][]float32
	for _, i := range []int{11, 12} {
		x := m.Preprocess.Image(fashionImage(test, i))
		rows := make([][]float32, 28)
		for r := range rows {
			rows[r] = x[r*28 : (r+1)*28]
		}
		nested = append(nested, [][][]float32{rows})
	}
	code, ans = postInfer(t, url+"/v2/models/fmnist/versions/1/infer", map[string]any{
		"inputs":  []any{map[string]any{"name": "input", "shape": []int{2, 1, 28, 28}, "datatype": "FP32", "data": nested}},
		"outputs": []any{map[string]any{"name": "distance"}},
	})
	if code != 200 || len(ans.Outputs) != 1 || ans.ID != "" {
		t.Fatalf("FP32 input: %d %+v", code, ans)
	}
	got = nil
	if err := json.Unmarshal(ans.Outputs[0].Data, &got); err != nil || !closeTo(got, want) {
		t.Errorf("FP32 input: distances %v (%v), want %v", got, err, want)
	}

	checkV2Classification(t, inferURL, ref, encoded, b64)

	// No outputs named: every output of the model.
	code, ans = postInfer(t, inferURL, map[string]any{
		"inputs": []any{map[string]any{"name": "image", "shape": []int{1}, "datatype": "BYTES", "data": b64[:1]}},
	})
	var names []string
	for _, o := range ans.Outputs {
		names = append(names, fmt.Sprintf("%s %s %v %s", o.Name, o.Datatype, o.Shape, o.Data))
	}
	if code != 200 || len(names) != 3 || !strings.HasPrefix(names[0], "distance FP32 [1 3]") || !strings.HasPrefix(names[1], "unknown_score FP32 [1]") || names[2] != "unknown BOOL [1] [false]" {
		t.Errorf("default outputs: %d %v", code, names)
	}
}

// checkV2Classification asks for Triton's classification extension on
// the encoded images (b64 in base64): the top 2 classes per image as
// "value:index:label", closest first, as ref classifies them.
func checkV2Classification(t *testing.T, inferURL string, ref *infer.Classifier, encoded [][]byte, b64 []string) {
	code, ans := postInfer(t, inferURL, map[string]any{
		"inputs":  []any{map[string]any{"name": "image", "shape": []int{2, 1}, "datatype": "BYTES", "data": b64}},
		"outputs": []any{map[string]any{"name": "distance", "parameters": map[string]any{"classification": 2}}},
	})
	var labels []string
	if code != 200 || len(ans.Outputs) != 1 || json.Unmarshal(ans.Outputs[0].Data, &labels) != nil || ans.Outputs[0].Datatype != "BYTES" || fmt.Sprint(ans.Outputs[0].Shape) != "[2 2]" || len(labels) != 4 {
		t.Fatalf("classification: %d %+v", code, ans)
	}
	for i, b := range encoded {
		res, err := ref.ClassifyReader(context.Background(), bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		for r := range 2 {
			parts := strings.SplitN(labels[i*2+r], ":", 3)
			p := res.Predictions[r]
			value, err := strconv.ParseFloat(parts[0], 64)
			index, _ := strconv.Atoi(parts[1])
			if len(parts) != 3 || err != nil || ref.Classes()[index].ID != p.ClassID || parts[2] != p.Name || math.Abs(value-float64(p.Distance)) > 1e-5*max(1, math.Abs(value)) {
				t.Errorf("image %d rank %d: %q, want %v:%d:%s", i, r, labels[i*2+r], p.Distance, p.ClassID, p.Name)
			}
		}
	}
}

// TestV2InferErrors checks that malformed inference requests get 4xx and
// the specification's error object, {"error": "..."}, naming the problem.
func TestV2InferErrors(t *testing.T) {
	url, _ := v2Server(t)
	_, test := testModel(t)
	png := encodePNG(t, fashionImage(test, 0))
	good := base64.StdEncoding.EncodeToString(png)
	image := func(shape []int, datatype string, data any) string {
		b, err := json.Marshal(map[string]any{"inputs": []any{map[string]any{"name": "image", "shape": shape, "datatype": datatype, "data": data}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	raw := func(s string) string { return s }
	cases := []struct {
		path, contentType string
		body              string
		status            int
		has               string
	}{
		{"fmnist", "", raw(`{"inputs": [`), 400, "inference request"},
		{"fmnist", "text/plain", image([]int{1}, "BYTES", []string{good}), 415, "unsupported content type"},
		{"other", "", image([]int{1}, "BYTES", []string{good}), 404, `model "other" is not served`},
		{"fmnist/versions/3", "", image([]int{1}, "BYTES", []string{good}), 404, "version 3 is not served"},
		{"fmnist", "", raw(`{"inputs": []}`), 400, "0 input tensors"},
		{"fmnist", "", raw(`{"inputs": [{"name": "pixels", "shape": [1], "datatype": "BYTES", "data": ["x"]}]}`), 400, `unknown input "pixels"`},
		{"fmnist", "", image([]int{1}, "FP32", []string{good}), 400, "want BYTES"},
		{"fmnist", "", image([]int{2}, "BYTES", []string{good}), 400, "its shape [2] says 2"},
		{"fmnist", "", image([]int{0}, "BYTES", []string{}), 400, "want positive dimensions"},
		{"fmnist", "", image([]int{1, 2}, "BYTES", []string{good, good}), 400, "want [N] or [N, 1]"},
		{"fmnist", "", image([]int{1}, "BYTES", []string{"not base64!"}), 415, "unknown image format"},
		{"fmnist", "", image([]int{1}, "BYTES", []int{1}), 400, "want an array of strings"},
		{"fmnist", "", image([]int{1}, "BYTES", []string{base64.StdEncoding.EncodeToString([]byte("hello"))}), 415, "unknown image format"},
		{"fmnist", "", image([]int{1}, "BYTES", []string{base64.StdEncoding.EncodeToString(png[:len(png)/2])}), 400, "truncated or corrupt png image"},
		{"fmnist", "", image([]int{1}, "BYTES", []string{base64.StdEncoding.EncodeToString(pngHeader(100000, 100000))}), 413, "100000x100000"},
		{"fmnist", "", raw(`{"inputs": [{"name": "input", "shape": [1, 1, 28, 27], "datatype": "FP32", "data": [0]}]}`), 400, "want [N, 1, 28, 28]"},
		{"fmnist", "", raw(`{"inputs": [{"name": "input", "shape": [1, 1, 28, 28], "datatype": "FP32", "data": [1, 2, 3]}]}`), 400, "3 values, the shape says 784"},
		{"fmnist", "", raw(`{"inputs": [{"name": "input", "shape": [1, 1, 28, 28], "datatype": "FP32", "data": [[1, "a"]]}]}`), 400, "is not a number"},
		{"fmnist", "", raw(`{"inputs": [{"name": "input", "shape": [1, 1, 28, 28], "datatype": "INT8", "data": [1]}]}`), 400, "want FP32"},
		{"fmnist", "", raw(`{"inputs": [{"name": "image", "shape": [1], "datatype": "BYTES", "data": ["` + good + `"]}], "outputs": [{"name": "logits"}]}`), 400, `unknown output "logits"`},
		{"fmnist", "", raw(`{"inputs": [{"name": "image", "shape": [1], "datatype": "BYTES", "data": ["` + good + `"]}], "outputs": [{"name": "probabilities"}]}`), 400, "no calibration"},
		{"fmnist", "", raw(`{"inputs": [{"name": "image", "shape": [1], "datatype": "BYTES", "data": ["` + good + `"]}], "outputs": [{"name": "distance", "parameters": {"classification": 0}}]}`), 400, "classification 0"},
		{"fmnist", "", image([]int{1}, "BYTES", []string{strings.Repeat("A", 300<<10)}), 413, "request body"},
	}
	for i, c := range cases {
		code, ans := call(t, "POST", url+"/v2/models/"+c.path+"/infer", c.contentType, []byte(c.body))
		if msg, _ := ans["error"].(string); code != c.status || !strings.Contains(msg, c.has) || len(ans) != 1 {
			t.Errorf("case %d: %d %v, want %d and only an error naming %q", i, code, ans, c.status, c.has)
		}
	}
}

// FuzzV2Infer checks that no inference request body makes the handler
// panic or answer 500: every bad request is the client's fault (4xx).
func FuzzV2Infer(f *testing.F) {
	model, test := testModel(f)
	png := encodePNG(f, fashionImage(test, 0))
	b64 := base64.StdEncoding.EncodeToString(png)
	f.Add(`{"inputs": [{"name": "image", "shape": [1], "datatype": "BYTES", "data": ["` + b64 + `"]}]}`)
	f.Add(`{"id": "1", "inputs": [{"name": "image", "shape": [1, 1], "datatype": "BYTES", "data": ["` + b64[:40] + `"]}], "outputs": [{"name": "distance", "parameters": {"classification": 2}}]}`)
	f.Add(`{"inputs": [{"name": "input", "shape": [1, 1, 28, 28], "datatype": "FP32", "data": [[[0.5, -1e3, 7]]]}]}`)
	f.Add(`{"inputs": [{"name": "input", "shape": [1, 1, 2, 2], "datatype": "FP32", "data": [1, 2, 3, 4]}], "outputs": [{"name": "unknown"}]}`)
	f.Add(`{"inputs": [{"name": "image", "shape": [9223372036854775807], "datatype": "BYTES", "data": []}]}`)
	f.Add(`[]`)
	cfg := testConfig(model)
	cfg.MaxPixels, cfg.MaxBody, cfg.MaxConcurrent = 1<<16, 1<<16, 2
	s := newTestServer(f, cfg)
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "/v2/models/bicyc/infer", strings.NewReader(body))
		rec := httptest.NewRecorder()
		s.Public.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && (rec.Code < 400 || rec.Code > 499) {
			t.Errorf("status %d: %s", rec.Code, rec.Body)
		}
	})
}
