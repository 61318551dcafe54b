package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/bicyc/bicyc/infer"

	"github.com/bicyc/bicyc/repository"

	"github.com/bicyc/bicyc/names"
)

// The Open Inference Protocol's core, free of any transport. Each
// transport (REST in v2.go, gRPC beside it) decodes its wire format into
// the types below, calls the core, and encodes the answer back.
//
// The contract:
//
//   - Requests carry decoded tensors: FP32 data as []float32, BYTES data as
//     raw element bytes (never base64: a transport that receives base64
//     decodes it). A transport checks each input with oipCheckInput (name,
//     datatype and shape against the model, the element count bounded)
//     and the data it decodes against that count before it sizes any
//     buffer from the shape; the core checks them all again, so a
//     transport that skips a check still gets a correct answer. A
//     transport that decodes its wire form itself (REST) does so in
//     oipRequest.Decode, which the core calls once the request holds a
//     classification slot.
//   - Responses carry typed output data (FP32 as []float32, BOOL as []bool,
//     BYTES as [][]byte), in the order of the request's outputs, or
//     oipDefaultOutputs' order when the request names none. Every value is
//     finite: an input that drives a score to NaN or infinity is refused
//     (400) naming the input, so every transport can encode every answer.
//   - Every error the core returns carries its class, read with
//     oipStatus: the HTTP status the REST transport answers. A gRPC
//     transport maps the same statuses: 400, 413 and 415 to
//     InvalidArgument, 404 to NotFound, 408 and 504 to DeadlineExceeded,
//     499 to Canceled, 503 to Unavailable, 500 to Internal.
//   - A transport that fails a request before calling oipInfer, once it
//     knows the version (a body it cannot read, a content type it does not
//     take), counts the failure with oipFailed.
//   - Model versions are strings as on the wire: "" is the latest version
//     the server serves, otherwise a positive decimal number.

// Tensor and output names, shapes and data types are the protocol's
// contract with clients; docs/serving.md documents them.
const (
	// inputImage is a BYTES tensor [N] (or [N, 1]) of encoded images.
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

// Extension names a server reports in its metadata.
const (
	extClassification  = "classification"
	extBinaryData      = "binary_tensor_data"
	extStatistics      = "statistics"
	extModelRepository = "model_repository"
)

// oipTensor is one input tensor of a request.
type oipTensor struct {
	Name     string
	Datatype string
	Shape    []int64
	// FP32 holds an FP32 tensor's values, row-major.
	FP32 []float32
	// Bytes holds a BYTES tensor's elements, raw.
	Bytes [][]byte
}

// oipOutputSpec is one output a request asks for.
type oipOutputSpec struct {
	Name string
	// Classification asks for the top Classification classes as BYTES
	// "value:index:label" instead of the scores (Triton's classification
	// extension); 0 asks for the scores.
	Classification int64
	// Parameters are the output's other parameters, for the transport
	// (binary_data, say); the core does not read them.
	Parameters map[string]any
}

// oipRequest is an inference request.
type oipRequest struct {
	ID      string
	Inputs  []oipTensor
	Outputs []oipOutputSpec
	// Parameters are the request's parameters, for the transport
	// (binary_data_output, say); the core does not read them.
	Parameters map[string]any
	// Decode, if set, fills the request in from its wire form (the fields
	// above) once the core holds a classification slot: decoded tensors
	// can take twice the bytes of their JSON, and are then held, like the
	// images decoded from them, only by the requests being classified,
	// never by those waiting. A transport whose tensors arrive decoded
	// (gRPC) leaves it nil.
	Decode func(*oipRequest) error
}

// oipOutput is one output tensor of a response: exactly one of FP32,
// Bool and Bytes holds its data, by Datatype.
type oipOutput struct {
	Name     string
	Datatype string
	Shape    []int64
	FP32     []float32
	Bool     []bool
	Bytes    [][]byte
}

// oipResponse is an inference response.
type oipResponse struct {
	ModelName    string
	ModelVersion string
	ID           string
	Outputs      []oipOutput
}

// oipError is an error of the core with its class, the HTTP status.
type oipError struct {
	status int
	err    error
}

func (e *oipError) Error() string { return e.err.Error() }
func (e *oipError) Unwrap() error { return e.err }

// oipStatus returns the class of an error of the core, as the HTTP status
// that tells a client what to do about it: the one table of error
// classes. An *oipError says its own; the server's sentinels map as
// requestStatus maps them; an error the server does not know is its own
// fault, 500.
func oipStatus(err error) int {
	var classed *oipError
	var bad *badRequest
	switch {
	case errors.As(err, &classed):
		return classed.status
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	status := requestStatus(err)
	if status == http.StatusBadRequest && !errors.As(err, &bad) {
		return http.StatusInternalServerError
	}
	return status
}

// oipVersion parses a version as the protocol's paths and messages carry
// it: "" is 0, the latest.
func oipVersion(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := repository.ParseVersion(s)
	if err != nil {
		return 0, &badRequest{err}
	}
	return n, nil
}

// oipFind returns the version a request names.
func (s *Server) oipFind(name, version string) (*version, error) {
	n, err := oipVersion(version)
	if err != nil {
		return nil, err
	}
	return s.models.Load().find(name, n)
}

// oipServerMetadata is the server metadata.
type oipServerMetadata struct {
	Name       string   `json:"name"`
	Version    string   `json:"version"`
	Extensions []string `json:"extensions"`
}

// oipServerMeta returns the server metadata of one listener: repository
// says whether the repository extension answers there (the admin one, and
// only for a model repository, where load and unload do what it says).
func (s *Server) oipServerMeta(repository bool) oipServerMetadata {
	exts := []string{extClassification, extBinaryData, extStatistics}
	if repository && s.name == "" {
		exts = append(exts, extModelRepository)
	}
	return oipServerMetadata{Name: "bicyc", Version: serverVersion(), Extensions: exts}
}

// oipServerReady reports whether the server takes requests and serves a
// model: false while shutting down or saturated (as /readyz).
func (s *Server) oipServerReady() bool {
	return s.ready.Load() && s.saturation() == "" && len(*s.models.Load()) > 0
}

// oipModelReady reports whether the version a request names is served
// and the server takes requests; a version not served is an error (404).
func (s *Server) oipModelReady(name, version string) (bool, error) {
	if _, err := s.oipFind(name, version); err != nil {
		return false, err
	}
	return s.ready.Load(), nil
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

// oipModelMetadata is the model metadata; Parameters are bicyc's:
// the classes in score-column order, whether the model is calibrated, its
// top_k and shortlist size.
type oipModelMetadata struct {
	Name       string           `json:"name"`
	Versions   []string         `json:"versions"`
	Platform   string           `json:"platform"`
	Inputs     []tensorMetadata `json:"inputs"`
	Outputs    []tensorMetadata `json:"outputs"`
	Parameters oipModelParams   `json:"parameters"`
}

type oipModelParams struct {
	Version    string          `json:"version"`
	Classes    []classMetadata `json:"classes"`
	Calibrated bool            `json:"calibrated"`
	TopK       int             `json:"top_k"`
	Shortlist  int             `json:"shortlist"`
}

// oipModelMeta returns the metadata of the version a request names; its
// Versions are every version served when the request names none.
func (s *Server) oipModelMeta(name, version string) (*oipModelMetadata, error) {
	cat := s.models.Load()
	v, err := s.oipFind(name, version)
	if err != nil {
		return nil, err
	}
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
	if m := (*cat)[name]; m != nil && version == "" {
		versions = versionStrings(m.numbers())
	}
	return &oipModelMetadata{
		Name:     name,
		Versions: versions,
		Platform: platform,
		Inputs: []tensorMetadata{
			{inputImage, "BYTES", []int64{-1}},
			{inputTensor, "FP32", []int64{-1, int64(shape[0]), int64(shape[1]), int64(shape[2])}},
		},
		Outputs: outputs,
		Parameters: oipModelParams{
			Version:    strconv.FormatInt(v.number, 10),
			Classes:    classes,
			Calibrated: v.model.Calibrated(),
			TopK:       v.topK,
			Shortlist:  v.model.ShortlistSize(),
		},
	}, nil
}

// oipCheckInput checks an input's name, datatype and shape against a
// model of input shape [C, H, W] and returns its number of elements (at
// most limit): the one rule of what a model takes, which a transport runs
// before it decodes the data (so a wrong input is reported as such, not as
// undecodable data, and no buffer is sized from a shape the model
// refuses), and the core again.
func oipCheckInput(in *oipTensor, shape [3]int, limit int64) (int64, error) {
	if err := oipInputDatatype(in.Name, in.Datatype); err != nil {
		return 0, err
	}
	count, err := oipElements(in.Shape, limit)
	if err != nil {
		return 0, badRequestf("input %q: %v", in.Name, err)
	}
	switch in.Name {
	case inputImage:
		if len(in.Shape) != 1 && !(len(in.Shape) == 2 && in.Shape[1] == 1) {
			return 0, badRequestf("input %q has shape %v, want [N] or [N, 1]", in.Name, in.Shape)
		}
	default:
		if len(in.Shape) != 4 || in.Shape[1] != int64(shape[0]) || in.Shape[2] != int64(shape[1]) || in.Shape[3] != int64(shape[2]) {
			return 0, badRequestf("input %q has shape %v, want [N, %d, %d, %d]", in.Name, in.Shape, shape[0], shape[1], shape[2])
		}
	}
	return count, nil
}

// oipInputDatatype checks an input's name and datatype.
func oipInputDatatype(name, datatype string) error {
	want := ""
	switch name {
	case inputImage:
		want = "BYTES"
	case inputTensor:
		want = "FP32"
	default:
		return badRequestf("unknown input %q: want %q (BYTES, encoded images) or %q (FP32, preprocessed)", name, inputImage, inputTensor)
	}
	if datatype != want {
		return badRequestf("input %q has datatype %q, want %s", name, datatype, want)
	}
	return nil
}

// oipClassification reads an output's classification parameter (Triton's
// classification extension) as a transport decoded it: a whole number of
// classes >= 1, in any of Go's number types.
func oipClassification(output string, v any) (int64, error) {
	var k float64
	switch x := v.(type) {
	case float64:
		k = x
	case int64:
		k = float64(x)
	case int:
		k = float64(x)
	default:
		return 0, badRequestf("output %q: classification %v: want a whole number >= 1", output, v)
	}
	if k < 1 || k != math.Trunc(k) || k > math.MaxInt32 {
		return 0, badRequestf("output %q: classification %v: want a whole number >= 1", output, v)
	}
	return int64(k), nil
}

// oipElements returns the number of elements of shape, refusing an empty
// batch and more elements than limit (a body's bytes: no element takes
// less than one byte on any wire).
func oipElements(shape []int64, limit int64) (int64, error) {
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

// oipInfer answers an inference request for version of model name: it
// waits for a classification slot (at most the queue timeout), checks
// and prepares the input (decoding images one at a time), refuses a batch
// over the memory limit per request (admitBatch) and classifies the rest
// in runs of at most infer.RunBatch images (infer.ClassifyRuns), counts and collects
// the images answered unknown, builds the outputs asked for, and records
// the model version's statistics. ctx ends the wait and the run early.
func (s *Server) oipInfer(ctx context.Context, name, version string, req *oipRequest) (*oipResponse, error) {
	start := time.Now()
	if !s.ready.Load() {
		return nil, errShuttingDown
	}
	number, err := oipVersion(version)
	if err != nil {
		return nil, err
	}
	picked, err := s.models.Load().find(name, number)
	if err != nil {
		return nil, err
	}
	resp, ran, ph, err := s.oipRun(ctx, name, number, req, start)
	if ran == nil {
		ran = picked
	}
	s.stats(name, ran.number).record(ph, time.Since(start), err == nil)
	return resp, err
}

// oipFailed counts a request for v that failed in its transport (a body
// it could not read, a content type it does not take) since start, as the
// core counts its own failures: every request that names a served version
// and fails is in its fail statistics, whichever transport it came by.
func (s *Server) oipFailed(v *version, name string, start time.Time) {
	s.stats(name, v.number).record(inferPhases{}, time.Since(start), false)
}

// oipRun is oipInfer after the version is found. It returns the version
// the request ran on (a swap may run it on a successor; nil if it did not
// run) and the durations of the phases it went through.
func (s *Server) oipRun(ctx context.Context, name string, number int64, req *oipRequest, start time.Time) (*oipResponse, *version, inferPhases, error) {
	var ph inferPhases
	if err := s.acquire(ctx); err != nil {
		return nil, nil, ph, err
	}
	defer s.release()
	ph.slotted, ph.queue = true, time.Since(start)
	t0 := time.Now()
	if req.Decode != nil {
		if err := req.Decode(req); err != nil {
			return nil, nil, ph, err
		}
	}
	var results []infer.Result
	var encoded []imageBytes
	v, err := s.use(name, number, func(m model) error {
		in, n, err := s.oipInput(req, m)
		if err == nil {
			err = s.admitBatch(n, m)
		}
		if err != nil {
			return err
		}
		encoded, ph.input, ph.infer, ph.runs = nil, time.Since(t0), 0, 0
		results, err = infer.ClassifyRuns(ctx, int(n), func(lo, hi int) ([]infer.Input, error) {
			t1 := time.Now()
			inputs, images, err := s.oipInputs(ctx, in, m, lo, hi)
			encoded = append(encoded, images...)
			ph.input += time.Since(t1)
			return inputs, err
		}, func(ctx context.Context, inputs []infer.Input) ([]infer.Result, error) {
			t2 := time.Now()
			out, err := m.ClassifyInputs(ctx, inputs)
			ph.infer += time.Since(t2)
			ph.runs++
			return out, err
		})
		if errors.Is(err, infer.ErrNonFinite) {
			return badRequestf("input %q: its values drive a score beyond float32 (%v): send values of the model's preprocessed range", req.Inputs[0].Name, err)
		}
		return err
	})
	if err != nil {
		return nil, v, ph, err
	}
	t2 := time.Now()
	outputs, err := oipOutputs(req, v, results)
	if err != nil {
		return nil, v, ph, err
	}
	for i, res := range results {
		if res.Unknown {
			s.unknowns.Inc()
			if i < len(encoded) {
				s.collect(encoded[i].bytes, encoded[i].format)
			}
		}
	}
	ph.output = time.Since(t2)
	ph.images = len(results)
	return &oipResponse{ModelName: name, ModelVersion: strconv.FormatInt(v.number, 10), ID: req.ID, Outputs: outputs}, v, ph, nil
}

// imageBytes is one encoded image of a request, kept for collection.
type imageBytes struct {
	bytes  []byte
	format string
}

// oipInput checks the request's one input tensor against m and returns
// it with its number of images.
func (s *Server) oipInput(req *oipRequest, m model) (*oipTensor, int64, error) {
	if len(req.Inputs) != 1 {
		return nil, 0, badRequestf("%d input tensors: want one, %q (BYTES, encoded images) or %q (FP32, preprocessed)", len(req.Inputs), inputImage, inputTensor)
	}
	in := &req.Inputs[0]
	count, err := oipCheckInput(in, m.InputShape(), s.maxBody)
	if err != nil {
		return nil, 0, err
	}
	switch in.Name {
	case inputImage:
		if int64(len(in.Bytes)) != count {
			return nil, 0, badRequestf("input %q has %d elements, its shape %v says %d", in.Name, len(in.Bytes), in.Shape, count)
		}
	default: // inputTensor
		if int64(len(in.FP32)) != count {
			return nil, 0, badRequestf("input %q: %d values, the shape says %d", in.Name, len(in.FP32), count)
		}
	}
	return in, in.Shape[0], nil
}

// oipInputs turns images lo to hi of the input tensor in (checked by
// oipInput) into the model's inputs: an "image" BYTES tensor is decoded
// image by image (the encoded bytes kept, for collection; ctx stops the
// decoding), an "input" FP32 tensor split image by image.
func (s *Server) oipInputs(ctx context.Context, in *oipTensor, m model, lo, hi int) ([]infer.Input, []imageBytes, error) {
	switch in.Name {
	case inputImage:
		inputs := make([]infer.Input, 0, hi-lo)
		images := make([]imageBytes, 0, hi-lo)
		for i := lo; i < hi; i++ {
			b := in.Bytes[i]
			input, format, err := m.DecodePrepare(ctx, bytes.NewReader(b))
			if err != nil {
				// The request's fault: 400, or 413/415 by the wrapped error.
				return nil, nil, &badRequest{fmt.Errorf("input %q element %d: %w", in.Name, i, err)}
			}
			inputs = append(inputs, input)
			images = append(images, imageBytes{b, format})
		}
		return inputs, images, nil
	default: // inputTensor
		shape := m.InputShape()
		size := shape[0] * shape[1] * shape[2]
		inputs := make([]infer.Input, 0, hi-lo)
		for i := lo; i < hi; i++ {
			input, err := m.InputFromTensor(in.FP32[i*size : (i+1)*size])
			if err != nil {
				return nil, nil, badRequestf("input %q image %d: %v", in.Name, i, err)
			}
			inputs = append(inputs, input)
		}
		return inputs, nil, nil
	}
}

// oipDefaultOutputs are the outputs of a request that names none: every
// output of the model.
func oipDefaultOutputs(calibrated bool) []oipOutputSpec {
	out := []oipOutputSpec{{Name: outputDistance}}
	if calibrated {
		out = append(out, oipOutputSpec{Name: outputProbabilities})
	}
	return append(out, oipOutputSpec{Name: outputUnknownScore}, oipOutputSpec{Name: outputUnknown})
}

// oipOutputs builds the requested output tensors (oipDefaultOutputs when
// the request names none) from one result per image. A value of an
// output that is not finite is the input's doing (the model's own images
// score finitely): 400 naming the input and the image. (Classification
// labels are text, any score readable in them.)
func oipOutputs(req *oipRequest, v *version, results []infer.Result) ([]oipOutput, error) {
	calibrated := v.model.Calibrated()
	asked := req.Outputs
	if len(asked) == 0 {
		asked = oipDefaultOutputs(calibrated)
	}
	n, k := len(results), len(v.classes)
	var out []oipOutput
	for _, a := range asked {
		switch a.Name {
		case outputDistance, outputProbabilities:
			if a.Name == outputProbabilities && !calibrated {
				return nil, badRequestf("output %q: the model has no calibration; ask for %q", a.Name, outputDistance)
			}
			table := make([]float32, n*k)
			for i, res := range results {
				for _, p := range res.Predictions {
					col, ok := v.column[p.ClassID]
					if !ok {
						continue
					}
					if a.Name == outputDistance {
						table[i*k+col] = p.Distance
					} else {
						table[i*k+col] = float32(p.Probability)
					}
				}
			}
			if a.Classification == 0 {
				out = append(out, oipOutput{Name: a.Name, Datatype: "FP32", Shape: []int64{int64(n), int64(k)}, FP32: table})
				continue
			}
			if _, err := oipClassification(a.Name, a.Classification); err != nil {
				return nil, err
			}
			top := int(min(a.Classification, int64(k)))
			labels := make([][]byte, 0, n*top)
			for i := range n {
				labels = append(labels, classify(table[i*k:(i+1)*k], top, a.Name == outputDistance, v)...)
			}
			out = append(out, oipOutput{Name: a.Name, Datatype: "BYTES", Shape: []int64{int64(n), int64(top)}, Bytes: labels})
		case outputUnknownScore:
			scores := make([]float32, n)
			for i, res := range results {
				scores[i] = float32(res.UnknownScore)
			}
			out = append(out, oipOutput{Name: a.Name, Datatype: "FP32", Shape: []int64{int64(n)}, FP32: scores})
		case outputUnknown:
			unknown := make([]bool, n)
			for i, res := range results {
				unknown[i] = res.Unknown
			}
			out = append(out, oipOutput{Name: a.Name, Datatype: "BOOL", Shape: []int64{int64(n)}, Bool: unknown})
		default:
			return nil, badRequestf("unknown output %q: want %s, %s, %s or %s", a.Name, outputDistance, outputProbabilities, outputUnknownScore, outputUnknown)
		}
	}
	for _, o := range out {
		perImage := max(1, len(o.FP32)/max(1, n))
		for i, x := range o.FP32 {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, badRequestf("input %q image %d: its values drive output %q to %v, beyond float32: send values of the model's preprocessed range", req.Inputs[0].Name, i/perImage, o.Name, x)
			}
		}
	}
	return out, nil
}

// classify answers the classification extension for one image's scores:
// the top k classes as "value:index:label" (index: the score column,
// label: the class name), closest first, smallest first for distances and
// largest first for probabilities; ties by column.
func classify(scores []float32, k int, ascending bool, v *version) [][]byte {
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
	out := make([][]byte, k)
	for i, c := range cols[:k] {
		out[i] = fmt.Appendf(nil, "%f:%d:%s", scores[c], c, v.classes[c].Name)
	}
	return out
}

// oipRepositoryIndex lists every version of every model in the
// repository, READY when served, UNAVAILABLE with the reason otherwise;
// ready lists only those served. Serving one model directory, it lists
// that model.
func (s *Server) oipRepositoryIndex(ready bool) ([]indexEntry, error) {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	cat := s.models.Load()
	if s.name != "" || ready {
		return nonNil(cat.index()), nil
	}
	names, err := repository.Models(s.cfg.Repository)
	if err != nil {
		return nil, &oipError{http.StatusInternalServerError, err}
	}
	out := []indexEntry{}
	for _, name := range names {
		found, err := repository.Versions(filepath.Join(s.cfg.Repository, name))
		if err != nil || len(found) == 0 {
			out = append(out, indexEntry{Name: name, State: "UNAVAILABLE", Reason: "no version directories"})
			continue
		}
		for _, n := range slices.Sorted(mapKeys(found)) {
			e := indexEntry{Name: name, Version: strconv.FormatInt(n, 10), State: "UNAVAILABLE"}
			if _, err := cat.find(name, n); err == nil {
				e.State = "READY"
			} else if why, failed := s.failures[name]; failed {
				e.Reason = why
			} else if m := (*cat)[name]; m != nil {
				e.Reason = "not selected by the version policy " + m.policy.String()
			} else {
				e.Reason = "unloaded"
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// oipRepositoryLoad (re)loads model name with the versions its policy
// selects, or policy ("latest", "latest:N", "specific:V1,V2"; "" keeps
// the model's policy), kept for later reloads, and returns the versions
// served. On failure the versions served before keep serving. Serving one
// model directory, it reloads that model, without a policy. The load runs
// to its end whoever asked for it, not tied to a request's context: the
// old versions are closed only after a swap.
func (s *Server) oipRepositoryLoad(name, policy string) ([]string, error) {
	var p *VersionPolicy
	if policy != "" {
		parsed, err := ParseVersionPolicy(policy)
		if err != nil {
			return nil, &badRequest{err}
		}
		p = &parsed
	}
	if s.name != "" {
		if name != s.name || p != nil {
			return nil, badRequestf("serving one model directory as %q: it can only be reloaded, without a version policy", s.name)
		}
		if err := s.Reload(); err != nil {
			return nil, &oipError{http.StatusInternalServerError, err}
		}
		return versionStrings((*s.models.Load())[s.name].numbers()), nil
	}
	if err := names.Model(name); err != nil {
		return nil, badRequestf("model name %v", err)
	}
	m, err := s.load(context.Background(), name, p)
	if err != nil {
		return nil, err
	}
	return versionStrings(m.numbers()), nil
}

// oipRepositoryUnload stops serving model name (a repository only).
func (s *Server) oipRepositoryUnload(name string) error { return s.unload(name) }
