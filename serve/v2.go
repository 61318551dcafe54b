package serve

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/infer"
)

// The Open Inference Protocol (KServe v2) over REST. Tensor and output
// names, shapes and data types are this file's contract with clients;
// docs/serving.md documents them.
const (
	// inputImage is a BYTES tensor [N] (or [N, 1]) of encoded images, each
	// element base64 in JSON.
	inputImage = "image"
	// inputTensor is an FP32 tensor [N, C, H, W] already preprocessed as
	// the model's manifest says (resized, normalised).
	inputTensor = "input"
	// outputDistance is FP32 [N, K]: each class's squared Mahalanobis
	// distance, in the class order of the metadata's parameters.classes.
	outputDistance = "distance"
	// outputProbabilities is FP32 [N, K]: calibrated class posteriors
	// (calibrated models only).
	outputProbabilities = "probabilities"
	// outputUnknownScore is FP32 [N]; outputUnknown BOOL [N] (see
	// infer.Result).
	outputUnknownScore = "unknown_score"
	outputUnknown      = "unknown"
	// platform names what runs the models in the model metadata.
	platform = "bicyc_onnxruntime"
)

// v2Routes adds the Open Inference Protocol's endpoints to the public mux.
func (s *Server) v2Routes(mux *http.ServeMux, route func(*http.ServeMux, string, string, http.HandlerFunc)) {
	route(mux, "GET /v2", "v2_server_metadata", s.v2ServerMetadata)
	route(mux, "GET /v2/health/live", "v2_live", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"live": true})
	})
	route(mux, "GET /v2/health/ready", "v2_ready", s.v2Ready)
	for _, prefix := range []string{"/v2/models/{name}", "/v2/models/{name}/versions/{version}"} {
		route(mux, "GET "+prefix, "v2_model_metadata", s.v2ModelMetadata)
		route(mux, "GET "+prefix+"/ready", "v2_model_ready", s.v2ModelReady)
		route(mux, "POST "+prefix+"/infer", "v2_infer", s.v2Infer)
	}
}

// v2ServerMetadata answers GET /v2.
func (s *Server) v2ServerMetadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"name":       "bicyc",
		"version":    serverVersion(),
		"extensions": []string{"classification", "model_repository"},
	})
}

// v2Ready answers GET /v2/health/ready: 200 {"ready": true} while the
// server takes requests and every model it serves is loaded, 503 {"ready":
// false} while shutting down or saturated (as /readyz).
func (s *Server) v2Ready(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() || s.saturation() != "" || len(*s.models.Load()) == 0 {
		writeJSON(w, http.StatusServiceUnavailable, map[string]bool{"live": true, "ready": false})
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"live": true, "ready": true})
}

// pathVersion returns the version in the request's path, 0 for none.
func pathVersion(r *http.Request) (int64, error) {
	v := r.PathValue("version")
	if v == "" {
		return 0, nil
	}
	n, err := parseVersion(v)
	if err != nil {
		return 0, &badRequest{err}
	}
	return n, nil
}

// v2ModelReady answers GET /v2/models/{name}[/versions/{v}]/ready: 200
// {"name", "ready": true} when that version is served, 404 otherwise.
func (s *Server) v2ModelReady(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	n, err := pathVersion(r)
	if err == nil {
		_, err = s.models.Load().find(name, n)
	}
	if err != nil {
		writeJSON(w, requestStatus(err), map[string]any{"name": name, "ready": false, "error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": name, "ready": s.ready.Load()})
}

// tensorMetadata is the protocol's $metadata_tensor.
type tensorMetadata struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
}

// classMetadata describes one score column in the model metadata.
type classMetadata struct {
	Index int    `json:"index"`
	ID    int    `json:"id"`
	Name  string `json:"name"`
	Task  int    `json:"task"`
}

// v2ModelMetadata answers GET /v2/models/{name}[/versions/{v}]: the
// inputs, the outputs, and in parameters the classes in score-column
// order, whether the model is calibrated and its top_k.
func (s *Server) v2ModelMetadata(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	n, err := pathVersion(r)
	var v *version
	if err == nil {
		v, err = s.models.Load().find(name, n)
	}
	if err != nil {
		writeError(w, requestStatus(err), err)
		return
	}
	m := (*s.models.Load())[name]
	shape := v.model.InputShape()
	k := int64(len(v.classes))
	outputs := []tensorMetadata{{outputDistance, "FP32", []int64{-1, k}}}
	if v.model.Calibrated() {
		outputs = append(outputs, tensorMetadata{outputProbabilities, "FP32", []int64{-1, k}})
	}
	outputs = append(outputs, tensorMetadata{outputUnknownScore, "FP32", []int64{-1}}, tensorMetadata{outputUnknown, "BOOL", []int64{-1}})
	classes := make([]classMetadata, len(v.classes))
	for i, c := range v.classes {
		classes[i] = classMetadata{Index: i, ID: c.ID, Name: c.Name, Task: c.Task}
	}
	versions := []string{strconv.FormatInt(v.number, 10)}
	if m != nil && n == 0 {
		versions = versionStrings(m.numbers())
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"name":     name,
		"versions": versions,
		"platform": platform,
		"inputs": []tensorMetadata{
			{inputImage, "BYTES", []int64{-1}},
			{inputTensor, "FP32", []int64{-1, int64(shape[0]), int64(shape[1]), int64(shape[2])}},
		},
		"outputs": outputs,
		"parameters": map[string]any{
			"version":    strconv.FormatInt(v.number, 10),
			"classes":    classes,
			"calibrated": v.model.Calibrated(),
			"top_k":      v.topK,
			"shortlist":  v.model.ShortlistSize(),
		},
	})
}

// inferRequest is the protocol's $inference_request.
type inferRequest struct {
	ID         string          `json:"id"`
	Parameters json.RawMessage `json:"parameters"`
	Inputs     []struct {
		Name     string          `json:"name"`
		Shape    []int64         `json:"shape"`
		Datatype string          `json:"datatype"`
		Data     json.RawMessage `json:"data"`
	} `json:"inputs"`
	Outputs []struct {
		Name       string `json:"name"`
		Parameters struct {
			// Classification asks for the top k classes as strings
			// (Triton's classification extension).
			Classification *int `json:"classification"`
		} `json:"parameters"`
	} `json:"outputs"`
}

// outputTensor is the protocol's $response_output.
type outputTensor struct {
	Name     string  `json:"name"`
	Datatype string  `json:"datatype"`
	Shape    []int64 `json:"shape"`
	Data     any     `json:"data"`
}

// v2Infer answers POST /v2/models/{name}[/versions/{v}]/infer. The body is
// read and bounded like /v1/classify's, and classified in one slot: the
// images are decoded one at a time and reduced to the model's input, then
// run as one batch.
func (s *Server) v2Infer(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		writeError(w, http.StatusServiceUnavailable, errShuttingDown)
		return
	}
	if r.ContentLength > s.maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("request body declares %d bytes, more than the limit of %d", r.ContentLength, s.maxBody))
		return
	}
	name := r.PathValue("name")
	number, err := pathVersion(r)
	if err == nil {
		_, err = s.models.Load().find(name, number)
	}
	if err == nil {
		err = jsonContent(r)
	}
	if err != nil {
		writeError(w, requestStatus(err), err)
		return
	}
	body, release, err := s.readBody(s.limitBody(w, r))
	defer release()
	if err != nil {
		writeError(w, requestStatus(err), err)
		return
	}
	if err := s.acquire(r.Context()); err != nil {
		writeError(w, requestStatus(err), err)
		return
	}
	defer s.release()
	var req inferRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("inference request: %w", err))
		return
	}
	body = nil
	var results []infer.Result
	var encoded []imageBytes
	v, err := s.use(name, number, func(m model) error {
		inputs, images, err := s.v2Inputs(&req, m)
		if err != nil {
			return err
		}
		encoded = images
		results, err = m.ClassifyInputs(r.Context(), inputs)
		return err
	})
	if err != nil {
		status := requestStatus(err)
		var bad *badRequest
		if isClosed(err) || errors.Is(err, errNotFound) || errors.As(err, &bad) || status != http.StatusBadRequest {
			writeError(w, status, err)
		} else {
			writeError(w, http.StatusInternalServerError, err)
		}
		return
	}
	for i, res := range results {
		if res.Unknown {
			s.unknowns.Inc()
			if i < len(encoded) {
				s.collect(encoded[i].bytes, encoded[i].format)
			}
		}
	}
	outputs, err := v2Outputs(&req, v, results)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	resp := map[string]any{"model_name": name, "model_version": strconv.FormatInt(v.number, 10), "outputs": outputs}
	if req.ID != "" {
		resp["id"] = req.ID
	}
	writeJSON(w, http.StatusOK, resp)
}

// imageBytes is one encoded image of a request, kept for collection.
type imageBytes struct {
	bytes  []byte
	format string
}

// jsonContent accepts a request declaring no content type or JSON.
func jsonContent(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return fmt.Errorf("content type %q: %w: an inference request is JSON (application/json)", ct, errContentType)
	}
	return nil
}

// v2Inputs turns the request's one input tensor into the model's inputs:
// an "image" BYTES tensor is decoded image by image (the encoded bytes
// kept, for collection), an "input" FP32 tensor split image by image.
func (s *Server) v2Inputs(req *inferRequest, m model) ([]infer.Input, []imageBytes, error) {
	if len(req.Inputs) != 1 {
		return nil, nil, badRequestf("%d input tensors: want one, %q (BYTES, encoded images) or %q (FP32, preprocessed)", len(req.Inputs), inputImage, inputTensor)
	}
	in := req.Inputs[0]
	count, err := elements(in.Shape, s.maxBody)
	if err != nil {
		return nil, nil, err
	}
	switch in.Name {
	case inputImage:
		if in.Datatype != "BYTES" {
			return nil, nil, badRequestf("input %q has datatype %q, want BYTES", in.Name, in.Datatype)
		}
		if len(in.Shape) != 1 && !(len(in.Shape) == 2 && in.Shape[1] == 1) {
			return nil, nil, badRequestf("input %q has shape %v, want [N] or [N, 1]", in.Name, in.Shape)
		}
		var items []string
		if err := json.Unmarshal(in.Data, &items); err != nil {
			return nil, nil, badRequestf("input %q: data: want an array of base64 strings: %v", in.Name, err)
		}
		if int64(len(items)) != count {
			return nil, nil, badRequestf("input %q has %d elements, its shape %v says %d", in.Name, len(items), in.Shape, count)
		}
		inputs := make([]infer.Input, len(items))
		images := make([]imageBytes, len(items))
		for i, item := range items {
			b, err := base64.StdEncoding.DecodeString(item)
			if err != nil {
				return nil, nil, badRequestf("input %q element %d: not base64: %v", in.Name, i, err)
			}
			img, format, err := data.DecodeImage(bytes.NewReader(b), s.maxPixels)
			if err != nil {
				// The request's fault: 400, or 413/415 by the wrapped error.
				return nil, nil, &badRequest{fmt.Errorf("input %q element %d: %w", in.Name, i, err)}
			}
			if inputs[i], err = m.Prepare(img); err != nil {
				return nil, nil, fmt.Errorf("input %q element %d: %w", in.Name, i, err)
			}
			bounds := img.Bounds()
			img = nil
			ReleaseImage(bounds)
			images[i] = imageBytes{b, format}
		}
		return inputs, images, nil
	case inputTensor:
		shape := m.InputShape()
		if in.Datatype != "FP32" {
			return nil, nil, badRequestf("input %q has datatype %q, want FP32", in.Name, in.Datatype)
		}
		if len(in.Shape) != 4 || in.Shape[1] != int64(shape[0]) || in.Shape[2] != int64(shape[1]) || in.Shape[3] != int64(shape[2]) {
			return nil, nil, badRequestf("input %q has shape %v, want [N, %d, %d, %d]", in.Name, in.Shape, shape[0], shape[1], shape[2])
		}
		values, err := flattenNumbers(in.Data, int(count))
		if err != nil {
			return nil, nil, badRequestf("input %q: %v", in.Name, err)
		}
		size := shape[0] * shape[1] * shape[2]
		inputs := make([]infer.Input, in.Shape[0])
		for i := range inputs {
			if inputs[i], err = m.InputFromTensor(values[i*size : (i+1)*size]); err != nil {
				return nil, nil, badRequestf("input %q image %d: %v", in.Name, i, err)
			}
		}
		return inputs, nil, nil
	}
	return nil, nil, badRequestf("unknown input %q: want %q (BYTES, encoded images) or %q (FP32, preprocessed)", in.Name, inputImage, inputTensor)
}

// elements returns the number of elements of shape, refusing an empty
// batch and more elements than a body of limit bytes can carry.
func elements(shape []int64, limit int64) (int64, error) {
	if len(shape) == 0 {
		return 0, badRequestf("input shape is empty")
	}
	n := int64(1)
	for _, d := range shape {
		if d < 1 || d > limit || n*d > limit {
			return 0, badRequestf("input shape %v: want positive dimensions, at most %d elements", shape, limit)
		}
		n *= d
	}
	return n, nil
}

// flattenNumbers reads a JSON array of numbers, flat or nested in row-major
// order (both are valid tensor data), into want float32 values, without
// holding a decoded JSON value per number.
func flattenNumbers(raw []byte, want int) ([]float32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, errors.New("data: want an array of numbers")
	}
	out := make([]float32, 0, want)
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
			if len(out) == want {
				return nil, fmt.Errorf("data: more than the shape's %d values", want)
			}
			out = append(out, float32(f))
			i = j
		}
	}
	if depth != 0 {
		return nil, errors.New("data: unbalanced '['")
	}
	if len(out) != want {
		return nil, fmt.Errorf("data: %d values, the shape says %d", len(out), want)
	}
	return out, nil
}

// v2Outputs builds the requested output tensors (all of them when the
// request names none) from one result per image.
func v2Outputs(req *inferRequest, v *version, results []infer.Result) ([]outputTensor, error) {
	type request struct {
		name           string
		classification *int
	}
	var asked []request
	for _, o := range req.Outputs {
		asked = append(asked, request{o.Name, o.Parameters.Classification})
	}
	calibrated := v.model.Calibrated()
	if len(asked) == 0 {
		asked = []request{{outputDistance, nil}}
		if calibrated {
			asked = append(asked, request{outputProbabilities, nil})
		}
		asked = append(asked, request{outputUnknownScore, nil}, request{outputUnknown, nil})
	}
	n, k := len(results), len(v.classes)
	var out []outputTensor
	for _, a := range asked {
		switch a.name {
		case outputDistance, outputProbabilities:
			if a.name == outputProbabilities && !calibrated {
				return nil, fmt.Errorf("output %q: the model has no calibration; ask for %q", a.name, outputDistance)
			}
			table := make([]float32, n*k)
			for i, res := range results {
				for _, p := range res.Predictions {
					col, ok := v.column[p.ClassID]
					if !ok {
						continue
					}
					if a.name == outputDistance {
						table[i*k+col] = p.Distance
					} else {
						table[i*k+col] = float32(p.Probability)
					}
				}
			}
			if a.classification == nil {
				out = append(out, outputTensor{a.name, "FP32", []int64{int64(n), int64(k)}, table})
				continue
			}
			top := *a.classification
			if top < 1 {
				return nil, fmt.Errorf("output %q: classification %d: want >= 1", a.name, top)
			}
			top = min(top, k)
			labels := make([]string, 0, n*top)
			for i := range n {
				labels = append(labels, classify(table[i*k:(i+1)*k], top, a.name == outputDistance, v)...)
			}
			out = append(out, outputTensor{a.name, "BYTES", []int64{int64(n), int64(top)}, labels})
		case outputUnknownScore:
			scores := make([]float32, n)
			for i, res := range results {
				scores[i] = float32(res.UnknownScore)
			}
			out = append(out, outputTensor{a.name, "FP32", []int64{int64(n)}, scores})
		case outputUnknown:
			unknown := make([]bool, n)
			for i, res := range results {
				unknown[i] = res.Unknown
			}
			out = append(out, outputTensor{a.name, "BOOL", []int64{int64(n)}, unknown})
		default:
			return nil, fmt.Errorf("unknown output %q: want %s, %s, %s or %s", a.name, outputDistance, outputProbabilities, outputUnknownScore, outputUnknown)
		}
	}
	return out, nil
}

// classify answers the classification extension for one image's scores:
// the top k classes as "value:index:label" (index: the score column,
// label: the class name), closest first, smallest first for distances and
// largest first for probabilities; ties by column.
func classify(scores []float32, k int, ascending bool, v *version) []string {
	cols := make([]int, len(scores))
	for i := range cols {
		cols[i] = i
	}
	slices.SortStableFunc(cols, func(a, b int) int {
		x, y := scores[a], scores[b]
		if !ascending {
			x, y = y, x
		}
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	out := make([]string, k)
	for i, c := range cols[:k] {
		out[i] = fmt.Sprintf("%f:%d:%s", scores[c], c, v.classes[c].Name)
	}
	return out
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
