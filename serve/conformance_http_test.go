package serve

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"testing"
)

// httpClient plays a Triton or KServe HTTP client from the specifications
// (inference_rest.md; extension_binary_data.md): with binary, it sends
// every input as binary tensor data and asks for every output as binary
// data, as Triton's Python client does by default; otherwise it sends and
// asks for JSON, as KServe's InferenceRESTClient does, BYTES base64.
type httpClient struct {
	url    string
	binary bool
}

// do sends a request and returns the status, the headers and the body.
func (c *httpClient) do(t *testing.T, method, path string, header http.Header, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, c.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// getJSON gets path and decodes its JSON answer into v, failing the test
// on a body that is not JSON (every answer, errors included, is).
func (c *httpClient) getJSON(t *testing.T, path string, v any) int {
	t.Helper()
	code, h, b := c.do(t, "GET", path, nil, nil)
	if ct := h.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: content type %q", path, ct)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %d, not JSON: %q", path, code, b)
	}
	return code
}

// modelPath is the protocol's model path, with the version if any.
func modelPath(model, version string) string {
	if version == "" {
		return "/v2/models/" + model
	}
	return "/v2/models/" + model + "/versions/" + version
}

func (c *httpClient) live(t *testing.T) (int, bool) {
	var a struct{ Live bool }
	return c.getJSON(t, "/v2/health/live", &a), a.Live
}

func (c *httpClient) ready(t *testing.T) (int, bool) {
	var a struct{ Ready bool }
	return c.getJSON(t, "/v2/health/ready", &a), a.Ready
}

func (c *httpClient) extensions(t *testing.T) (int, []string) {
	var a struct {
		Name, Version string
		Extensions    []string
	}
	code := c.getJSON(t, "/v2", &a)
	if a.Name == "" || a.Version == "" {
		t.Errorf("server metadata without name or version: %+v", a)
	}
	return code, a.Extensions
}

func (c *httpClient) modelMetadata(t *testing.T, model, version string) confMetadata {
	var a struct {
		Name, Platform, Error string
		Versions              []string
		Inputs, Outputs       []struct {
			Name, Datatype string
			Shape          []int64
		}
	}
	m := confMetadata{status: c.getJSON(t, modelPath(model, version), &a)}
	m.err, m.name, m.platform, m.versions = a.Error, a.Name, a.Platform, a.Versions
	for _, in := range a.Inputs {
		m.inputs = append(m.inputs, fmt.Sprintf("%s %s %v", in.Name, in.Datatype, in.Shape))
	}
	for _, o := range a.Outputs {
		m.outputs = append(m.outputs, fmt.Sprintf("%s %s %v", o.Name, o.Datatype, o.Shape))
	}
	return m
}

func (c *httpClient) modelReady(t *testing.T, model, version string) (int, bool) {
	var a struct{ Ready bool }
	return c.getJSON(t, modelPath(model, version)+"/ready", &a), a.Ready
}

func (c *httpClient) stats(t *testing.T, model, version string) (int, []confStat) {
	type duration struct{ Count, NS uint64 }
	var a struct {
		ModelStats []struct {
			Name, Version  string
			LastInference  int64  `json:"last_inference"`
			InferenceCount uint64 `json:"inference_count"`
			ExecutionCount uint64 `json:"execution_count"`
			InferenceStats struct {
				Success, Fail, Queue duration
				ComputeInput         duration `json:"compute_input"`
				ComputeInfer         duration `json:"compute_infer"`
				ComputeOutput        duration `json:"compute_output"`
			} `json:"inference_stats"`
		} `json:"model_stats"`
	}
	path := "/v2/models/stats"
	if model != "" {
		path = modelPath(model, version) + "/stats"
	}
	code := c.getJSON(t, path, &a)
	var out []confStat
	for _, m := range a.ModelStats {
		is := m.InferenceStats
		d := func(x duration) [2]uint64 { return [2]uint64{x.Count, x.NS} }
		out = append(out, confStat{name: m.Name, version: m.Version, inferenceCount: m.InferenceCount, executionCount: m.ExecutionCount,
			success: d(is.Success), fail: d(is.Fail), queue: d(is.Queue), input: d(is.ComputeInput), infer: d(is.ComputeInfer), output: d(is.ComputeOutput),
			lastInference: m.LastInference})
	}
	return code, out
}

// nest shapes flat data (a []float32 or []string) as nested arrays, row
// major, as the specification's "Tensor Data" allows.
func nest[T any](flat []T, shape []int64) any {
	if len(shape) <= 1 {
		return flat
	}
	n := len(flat) / max(int(shape[0]), 1)
	out := make([]any, 0, shape[0])
	for i := 0; i+n <= len(flat) && n > 0; i += n {
		out = append(out, nest(flat[i:i+n], shape[1:]))
	}
	return out
}

// infer sends the request in the client's encoding and decodes the
// answer: JSON, or with Inference-Header-Content-Length the JSON and
// then each binary output's binary_data_size bytes, in output order.
func (c *httpClient) infer(t *testing.T, model, version string, r confRequest) confAnswer {
	t.Helper()
	req := map[string]any{}
	if r.id != "" {
		req["id"] = r.id
	}
	var tail []byte
	var inputs []any
	for _, in := range r.inputs {
		tensor := map[string]any{"name": in.name, "shape": in.shape, "datatype": in.datatype}
		if c.binary {
			start := len(tail)
			for _, x := range in.fp32 {
				tail = binary.LittleEndian.AppendUint32(tail, math.Float32bits(x))
			}
			for _, b := range in.bytes {
				tail = binary.LittleEndian.AppendUint32(tail, uint32(len(b)))
				tail = append(tail, b...)
			}
			tensor["parameters"] = map[string]any{"binary_data_size": len(tail) - start}
		} else {
			var data any = in.fp32
			if in.datatype == "BYTES" || in.bytes != nil {
				items := make([]string, len(in.bytes))
				for i, b := range in.bytes {
					items[i] = b64(b)
				}
				data = items
				if in.nested {
					data = nest(items, in.shape)
				}
			} else if in.nested {
				data = nest(in.fp32, in.shape)
			}
			tensor["data"] = data
		}
		inputs = append(inputs, tensor)
	}
	req["inputs"] = inputs
	var outputs []any
	for _, o := range r.outputs {
		params := map[string]any{}
		if o.classification != 0 {
			params["classification"] = o.classification
		}
		if c.binary {
			params["binary_data"] = true
		}
		outputs = append(outputs, map[string]any{"name": o.name, "parameters": params})
	}
	if outputs != nil {
		req["outputs"] = outputs
	}
	if c.binary {
		req["parameters"] = map[string]any{"binary_data_output": true}
	}
	head, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	header := http.Header{"Content-Type": {"application/json"}}
	if c.binary {
		header = http.Header{"Content-Type": {"application/octet-stream"}, "Inference-Header-Content-Length": {strconv.Itoa(len(head))}}
	}
	code, h, body := c.do(t, "POST", modelPath(model, version)+"/infer", header, append(head, tail...))
	return decodeAnswer(t, code, h, body)
}

// decodeAnswer decodes an inference answer as a client does.
func decodeAnswer(t *testing.T, code int, h http.Header, body []byte) confAnswer {
	t.Helper()
	a := confAnswer{status: code}
	jsonPart, tail := body, []byte(nil)
	if n := h.Get("Inference-Header-Content-Length"); n != "" {
		size, err := strconv.Atoi(n)
		if err != nil || size > len(body) {
			t.Fatalf("Inference-Header-Content-Length %q of a %d-byte body", n, len(body))
		}
		jsonPart, tail = body[:size], body[size:]
	}
	var resp struct {
		ID           string `json:"id"`
		ModelName    string `json:"model_name"`
		ModelVersion string `json:"model_version"`
		Error        string `json:"error"`
		Outputs      []struct {
			Name, Datatype string
			Shape          []int64
			Parameters     struct {
				BinaryDataSize *int `json:"binary_data_size"`
			}
			Data json.RawMessage
		}
	}
	if err := json.Unmarshal(jsonPart, &resp); err != nil {
		t.Fatalf("status %d: answer not JSON (%v): %q", code, err, jsonPart)
	}
	a.err, a.id, a.model, a.modelVersion = resp.Error, resp.ID, resp.ModelName, resp.ModelVersion
	for _, o := range resp.Outputs {
		ct := confTensor{name: o.Name, datatype: o.Datatype, shape: o.Shape}
		if o.Parameters.BinaryDataSize != nil {
			n := *o.Parameters.BinaryDataSize
			if n > len(tail) {
				t.Fatalf("output %s: binary_data_size %d, %d bytes left", o.Name, n, len(tail))
			}
			raw := tail[:n]
			tail = tail[n:]
			switch o.Datatype {
			case "FP32":
				for i := 0; i+4 <= len(raw); i += 4 {
					ct.fp32 = append(ct.fp32, math.Float32frombits(binary.LittleEndian.Uint32(raw[i:])))
				}
			case "BOOL":
				for _, b := range raw {
					ct.bools = append(ct.bools, b != 0)
				}
			case "BYTES":
				for len(raw) >= 4 {
					l := binary.LittleEndian.Uint32(raw)
					ct.bytes = append(ct.bytes, raw[4:4+l])
					raw = raw[4+l:]
				}
			}
		} else {
			var err error
			switch o.Datatype {
			case "FP32":
				err = json.Unmarshal(o.Data, &ct.fp32)
			case "BOOL":
				err = json.Unmarshal(o.Data, &ct.bools)
			case "BYTES":
				var items []string
				err = json.Unmarshal(o.Data, &items)
				for _, s := range items {
					ct.bytes = append(ct.bytes, []byte(s))
				}
			}
			if err != nil {
				t.Fatalf("output %s: data %s: %v", o.Name, o.Data, err)
			}
		}
		a.outputs = append(a.outputs, ct)
	}
	if len(tail) != 0 {
		t.Errorf("%d bytes of binary data no output claims", len(tail))
	}
	return a
}
