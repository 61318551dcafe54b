package serve

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/bicyc/bicyc/infer"
)

// The Open Inference Protocol (KServe v2) over REST: the HTTP transport of
// the core in oip.go. It follows the protocol's REST specification
// (kserve/open-inference-protocol, specification/protocol/
// inference_rest.md) and Triton's extensions to it
// (triton-inference-server/server, docs/protocol/): binary tensor data
// (extension_binary_data.md), classification, statistics
// (extension_statistics.md) and, on the admin listener, the model
// repository (extension_model_repository.md).

// headerContentLength is the binary tensor data extension's header: the
// length of the JSON object at the start of a body that binary tensor
// data follows.
const headerContentLength = "Inference-Header-Content-Length"

// v2Routes adds the Open Inference Protocol's endpoints to the public mux.
func (s *Server) v2Routes(mux *http.ServeMux, route func(*http.ServeMux, string, string, http.HandlerFunc)) {
	route(mux, "GET /v2", "v2_server_metadata", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.oipServerMeta(false))
	})
	route(mux, "GET /v2/health/live", "v2_live", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"live": true})
	})
	route(mux, "GET /v2/health/ready", "v2_ready", s.v2Ready)
	route(mux, "GET /v2/models/stats", "v2_model_stats", s.v2ModelStats)
	for _, prefix := range []string{"/v2/models/{name}", "/v2/models/{name}/versions/{version}"} {
		route(mux, "GET "+prefix, "v2_model_metadata", s.v2ModelMetadata)
		route(mux, "GET "+prefix+"/ready", "v2_model_ready", s.v2ModelReady)
		route(mux, "GET "+prefix+"/stats", "v2_model_stats", s.v2ModelStats)
		route(mux, "POST "+prefix+"/infer", "v2_infer", s.v2Infer)
	}
}

// v2Ready answers GET /v2/health/ready: 200 {"ready": true} while the
// server takes requests and every model it serves is loaded, 503 {"ready":
// false} while shutting down or saturated (as /readyz).
func (s *Server) v2Ready(w http.ResponseWriter, _ *http.Request) {
	if !s.oipServerReady() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]bool{"live": true, "ready": false})
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"live": true, "ready": true})
}

// v2ModelReady answers GET /v2/models/{name}[/versions/{v}]/ready: 200
// {"name", "ready": true} when that version is served, 404 otherwise.
func (s *Server) v2ModelReady(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ready, err := s.oipModelReady(name, r.PathValue("version"))
	if err != nil {
		writeJSON(w, oipStatus(err), map[string]any{"name": name, "ready": false, "error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": name, "ready": ready})
}

// v2ModelMetadata answers GET /v2/models/{name}[/versions/{v}].
func (s *Server) v2ModelMetadata(w http.ResponseWriter, r *http.Request) {
	meta, err := s.oipModelMeta(r.PathValue("name"), r.PathValue("version"))
	if err != nil {
		writeError(w, oipStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, meta)
}

// v2ModelStats answers GET /v2/models[/{name}[/versions/{v}]]/stats with
// the statistics extension's $stats_model_response.
func (s *Server) v2ModelStats(w http.ResponseWriter, r *http.Request) {
	stats, err := s.oipModelStats(r.PathValue("name"), r.PathValue("version"))
	if err != nil {
		writeError(w, oipStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"model_stats": stats})
}

// v2Infer answers POST /v2/models/{name}[/versions/{v}]/infer: a JSON
// inference request, or with the binary tensor data extension a JSON
// request of Inference-Header-Content-Length bytes followed by the binary
// data of its inputs. The body is read and bounded like /v1/classify's,
// decoded (every length checked against the header and the declared
// shapes before a buffer is sized from them), and classified by the core.
func (s *Server) v2Infer(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		writeError(w, http.StatusServiceUnavailable, errShuttingDown)
		return
	}
	if r.ContentLength > s.maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("request body declares %d bytes, more than the limit of %d", r.ContentLength, s.maxBody))
		return
	}
	start := time.Now()
	name, version := r.PathValue("name"), r.PathValue("version")
	v, err := s.oipFind(name, version)
	header := r.Header.Get(headerContentLength)
	if err == nil {
		if err = inferContent(r, header != ""); err != nil {
			s.oipFailed(v, name, start)
		}
	}
	if err != nil {
		writeError(w, oipStatus(err), err)
		return
	}
	body, release, err := s.readBody(s.limitBody(w, r))
	defer release()
	if err != nil {
		s.oipFailed(v, name, start)
		writeError(w, oipStatus(err), err)
		return
	}
	defer returnMemory(len(body))
	req := &oipRequest{Decode: func(req *oipRequest) error {
		return decodeInferRequest(req, body, header, v.model.InputShape(), s.maxBody)
	}}
	resp, err := s.oipInfer(r.Context(), name, version, req)
	if err != nil {
		writeError(w, oipStatus(err), err)
		return
	}
	writeInferResponse(w, req, resp)
}

// inferContent accepts an inference request declaring no content type or
// JSON, or with binary tensor data (binary) also application/octet-stream,
// which the extension's example sends.
func inferContent(r *http.Request, binary bool) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || binary && mt == "application/octet-stream") {
		return nil
	}
	if binary {
		return fmt.Errorf("content type %q: %w: an inference request with binary tensor data is application/octet-stream or application/json", ct, errContentType)
	}
	return fmt.Errorf("content type %q: %w: an inference request is JSON (application/json), or binary tensor data with the %s header", ct, errContentType, headerContentLength)
}

// jsonInferRequest is the protocol's $inference_request.
type jsonInferRequest struct {
	ID         string         `json:"id"`
	Parameters map[string]any `json:"parameters"`
	Inputs     []struct {
		Name       string          `json:"name"`
		Shape      []int64         `json:"shape"`
		Datatype   string          `json:"datatype"`
		Parameters map[string]any  `json:"parameters"`
		Data       json.RawMessage `json:"data"`
	} `json:"inputs"`
	Outputs []struct {
		Name       string         `json:"name"`
		Parameters map[string]any `json:"parameters"`
	} `json:"outputs"`
}

// decodeInferRequest decodes an inference request body into req: JSON, or
// with a header (the Inference-Header-Content-Length value) that many
// bytes of JSON followed by the binary data of the inputs whose parameters
// give a binary_data_size, in the order of the inputs. Each input is
// checked (oipCheckInput) against a model of input shape [C, H, W] before
// its data is decoded; limit bounds its elements (the largest body).
func decodeInferRequest(req *oipRequest, body []byte, header string, shape [3]int, limit int64) error {
	jsonPart, binaryPart := body, []byte(nil)
	if header != "" {
		n, err := strconv.ParseInt(header, 10, 64)
		if err != nil || n < 0 || n > int64(len(body)) {
			return badRequestf("%s %q: want the length of the JSON at the start of the body, at most the body's %d bytes", headerContentLength, header, len(body))
		}
		jsonPart, binaryPart = body[:n], body[n:]
	}
	var j jsonInferRequest
	if err := json.Unmarshal(jsonPart, &j); err != nil {
		return badRequestf("inference request: %v", err)
	}
	req.ID, req.Parameters = j.ID, j.Parameters
	if err := checkBinaryFlag(j.Parameters, "binary_data_output", "request"); err != nil {
		return err
	}
	offset := 0
	for _, in := range j.Inputs {
		if string(bytes.TrimSpace(in.Data)) == "null" {
			in.Data = nil // "data": null, as some clients send beside binary data
		}
		t := oipTensor{Name: in.Name, Datatype: in.Datatype, Shape: in.Shape}
		count, err := oipCheckInput(&t, shape, limit)
		if err != nil {
			return err
		}
		size, isBinary := in.Parameters["binary_data_size"]
		switch {
		case isBinary && header == "":
			return badRequestf("input %q has a binary_data_size but the request no %s header", in.Name, headerContentLength)
		case isBinary && len(in.Data) > 0:
			return badRequestf("input %q has both data and a binary_data_size", in.Name)
		case isBinary:
			n, ok := size.(float64)
			if !ok || n < 0 || n != math.Trunc(n) || n > float64(len(binaryPart)-offset) {
				return badRequestf("input %q: binary_data_size %v: want a whole number of bytes, at most the %d bytes of binary data left", in.Name, size, len(binaryPart)-offset)
			}
			raw := binaryPart[offset : offset+int(n)]
			offset += int(n)
			if err := decodeBinaryInput(&t, raw, count); err != nil {
				return err
			}
		case len(in.Data) == 0:
			return badRequestf("input %q has no data and no binary_data_size", in.Name)
		default:
			if err := decodeJSONInput(&t, in.Data, count); err != nil {
				return err
			}
		}
		req.Inputs = append(req.Inputs, t)
	}
	if offset != len(binaryPart) {
		return badRequestf("%d bytes of binary data after the JSON, the inputs' binary_data_size sum to %d", len(binaryPart), offset)
	}
	for _, o := range j.Outputs {
		spec := oipOutputSpec{Name: o.Name, Parameters: o.Parameters}
		if k, ok := o.Parameters["classification"]; ok {
			n, err := oipClassification(o.Name, k)
			if err != nil {
				return err
			}
			spec.Classification = n
		}
		if err := checkBinaryFlag(o.Parameters, "binary_data", fmt.Sprintf("output %q", o.Name)); err != nil {
			return err
		}
		req.Outputs = append(req.Outputs, spec)
	}
	return nil
}

// checkBinaryFlag refuses a binary_data or binary_data_output parameter
// that is not a bool.
func checkBinaryFlag(params map[string]any, key, what string) error {
	if v, ok := params[key]; ok {
		if _, isBool := v.(bool); !isBool {
			return badRequestf("%s: parameter %s %v: want true or false", what, key, v)
		}
	}
	return nil
}

// decodeBinaryInput decodes an input's binary data (little-endian, row
// major; a BYTES element is a 4-byte little-endian length and the bytes)
// after checking its length against the count of elements the shape
// declares. The elements of a BYTES tensor are slices of raw.
func decodeBinaryInput(t *oipTensor, raw []byte, count int64) error {
	switch t.Datatype {
	case "FP32":
		if int64(len(raw)) != 4*count {
			return badRequestf("input %q: binary_data_size %d, its shape %v of FP32 takes %d bytes", t.Name, len(raw), t.Shape, 4*count)
		}
		t.FP32 = make([]float32, count)
		for i := range t.FP32 {
			t.FP32[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case "BYTES":
		t.Bytes = make([][]byte, 0, min(count, int64(len(raw)/4)))
		for len(raw) > 0 {
			if len(raw) < 4 {
				return badRequestf("input %q: binary data element %d: %d bytes left, want a 4-byte length", t.Name, len(t.Bytes), len(raw))
			}
			n := binary.LittleEndian.Uint32(raw)
			if uint64(n) > uint64(len(raw)-4) {
				return badRequestf("input %q: binary data element %d declares %d bytes, %d are left", t.Name, len(t.Bytes), n, len(raw)-4)
			}
			if int64(len(t.Bytes)) == count {
				return badRequestf("input %q: binary data holds more than the %d elements of its shape %v", t.Name, count, t.Shape)
			}
			t.Bytes = append(t.Bytes, raw[4:4+n:4+n])
			raw = raw[4+n:]
		}
		if int64(len(t.Bytes)) != count {
			return badRequestf("input %q has %d elements, its shape %v says %d", t.Name, len(t.Bytes), t.Shape, count)
		}
	}
	return nil
}

// decodeJSONInput decodes an input's JSON data, flat or nested in row-major
// order (both are valid tensor data). A BYTES element is a JSON string: a
// string that is entirely standard base64 is decoded (JSON strings carry
// UTF-8 text, which encoded images are not, so base64 is how they travel
// in JSON), any other string is taken as its UTF-8 bytes.
func decodeJSONInput(t *oipTensor, raw json.RawMessage, count int64) error {
	switch t.Datatype {
	case "FP32":
		values, err := flattenNumbers(raw, count)
		if err != nil {
			return badRequestf("input %q of shape %v: %v", t.Name, t.Shape, err)
		}
		t.FP32 = values
	case "BYTES":
		var items []string
		if err := flattenStrings(raw, &items, count); err != nil {
			return badRequestf("input %q: data: want an array of strings (base64 for images): %v", t.Name, err)
		}
		if int64(len(items)) != count {
			return badRequestf("input %q has %d elements, its shape %v says %d", t.Name, len(items), t.Shape, count)
		}
		t.Bytes = make([][]byte, len(items))
		for i, item := range items {
			if b, err := base64.StdEncoding.DecodeString(item); err == nil {
				t.Bytes[i] = b
			} else {
				t.Bytes[i] = []byte(item)
			}
		}
	}
	return nil
}

// flattenStrings appends the strings of a JSON array, flat or nested, to
// out, refusing more than limit of them.
func flattenStrings(raw json.RawMessage, out *[]string, limit int64) error {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return err
	}
	for _, item := range items {
		if t := bytes.TrimSpace(item); len(t) > 0 && t[0] == '[' {
			if err := flattenStrings(t, out, limit); err != nil {
				return err
			}
			continue
		}
		var s string
		if err := json.Unmarshal(item, &s); err != nil {
			return err
		}
		if int64(len(*out)) == limit {
			return fmt.Errorf("more than the shape's %d elements", limit)
		}
		*out = append(*out, s)
	}
	return nil
}

// flattenNumbers reads a JSON array of numbers, flat or nested in row-major
// order, into want float32 values, without holding a decoded JSON value
// per number. Every number takes at least two bytes of JSON (a digit and
// a separator), so the buffer is sized by the data's length when that
// holds fewer values than the shape declares.
func flattenNumbers(raw []byte, want int64) ([]float32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, errors.New("data: want an array of numbers")
	}
	out := make([]float32, 0, min(want, int64(len(raw))/2+1))
	depth := 0
	for i := 0; i < len(raw); {
		switch c := raw[i]; c {
		case '[':
			depth++
			i++
		case ']':
			if depth--; depth < 0 {
				return nil, errors.New("data: unbalanced ']'")
			}
			i++
		case ',', ' ', '\n', '\r', '\t':
			i++
		default:
			j := i
			for j < len(raw) && !strings.ContainsRune("[], \n\r\t", rune(raw[j])) {
				j++
			}
			f, err := strconv.ParseFloat(string(raw[i:j]), 32)
			if err != nil {
				return nil, fmt.Errorf("data: %.20q is not a number", raw[i:j])
			}
			if int64(len(out)) == want {
				return nil, fmt.Errorf("data: more than the shape's %d values", want)
			}
			out = append(out, float32(f))
			i = j
		}
	}
	if depth != 0 {
		return nil, errors.New("data: unbalanced '['")
	}
	if int64(len(out)) != want {
		return nil, fmt.Errorf("data: %d values, the shape says %d", len(out), want)
	}
	return out, nil
}

// jsonOutput is the protocol's $response_output; with binary data its
// data is left out and parameters.binary_data_size says its length.
type jsonOutput struct {
	Name       string         `json:"name"`
	Datatype   string         `json:"datatype"`
	Shape      []int64        `json:"shape"`
	Parameters map[string]any `json:"parameters,omitempty"`
	Data       any            `json:"data,omitempty"`
}

// writeInferResponse answers an inference: JSON, or, where the request
// asks for binary outputs (binary_data on an output, binary_data_output on
// the request, the output's own setting first), the JSON response of
// Inference-Header-Content-Length bytes followed by their binary data in
// output order.
func writeInferResponse(w http.ResponseWriter, req *oipRequest, resp *oipResponse) {
	outputs := make([]jsonOutput, len(resp.Outputs))
	var tail []byte
	for i, o := range resp.Outputs {
		outputs[i] = jsonOutput{Name: o.Name, Datatype: o.Datatype, Shape: o.Shape}
		if !binaryOutput(req, o.Name) {
			outputs[i].Data = jsonData(o)
			continue
		}
		start := len(tail)
		tail = appendBinary(tail, o)
		outputs[i].Parameters = map[string]any{"binary_data_size": len(tail) - start}
	}
	answer := map[string]any{"model_name": resp.ModelName, "model_version": resp.ModelVersion, "outputs": outputs}
	if resp.ID != "" {
		answer["id"] = resp.ID
	}
	if tail == nil {
		writeJSON(w, http.StatusOK, answer)
		return
	}
	head, err := json.Marshal(answer)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Errorf("encoding the answer: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set(headerContentLength, strconv.Itoa(len(head)))
	w.Header().Set("Content-Length", strconv.Itoa(len(head)+len(tail)))
	w.WriteHeader(http.StatusOK)
	w.Write(head)
	w.Write(tail)
}

// binaryOutput says whether the request asks for output name as binary
// data.
func binaryOutput(req *oipRequest, name string) bool {
	for _, o := range req.Outputs {
		if o.Name == name {
			if b, ok := o.Parameters["binary_data"].(bool); ok {
				return b
			}
		}
	}
	b, _ := req.Parameters["binary_data_output"].(bool)
	return b
}

// jsonData returns an output's data as JSON encodes it: BYTES elements as
// strings.
func jsonData(o oipOutput) any {
	switch o.Datatype {
	case "BOOL":
		return o.Bool
	case "BYTES":
		out := make([]string, len(o.Bytes))
		for i, b := range o.Bytes {
			out[i] = string(b)
		}
		return out
	}
	return o.FP32
}

// appendBinary appends an output's binary data: little-endian FP32, one
// byte per BOOL, and per BYTES element a 4-byte little-endian length and
// the bytes.
func appendBinary(dst []byte, o oipOutput) []byte {
	switch o.Datatype {
	case "BOOL":
		for _, b := range o.Bool {
			if b {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		}
	case "BYTES":
		for _, b := range o.Bytes {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
			dst = append(dst, b...)
		}
	default:
		for _, x := range o.FP32 {
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
		}
	}
	return dst
}

// decodeJSON decodes an optional JSON body of at most limit bytes into v;
// an empty body leaves v as it is.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return badRequestf("request body: %v", err)
	}
	return nil
}

// serverVersion is the bicyc module's version as the binary was built,
// "(devel)" for a build from a checkout.
func serverVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range append([]*debug.Module{&info.Main}, info.Deps...) {
			if d.Path == "github.com/bicyc/bicyc" && d.Version != "" {
				return d.Version
			}
		}
	}
	return "(devel)"
}

// isClosed reports a call on a model closed under it (a swap or unload).
func isClosed(err error) bool { return errors.Is(err, infer.ErrClosed) }
