package serve

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"math"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/infer"
)

// The Open Inference Protocol conformance suite. Its cases are written from
// the public specifications, not from the server's code:
//
//   - KServe's Open Inference Protocol, REST (kserve/open-inference-protocol,
//     specification/protocol/inference_rest.md): health ("Health"), server
//     and model metadata ("Server Metadata", "Model Metadata"), inference
//     ("Inference": $inference_request, $request_output,
//     $inference_response, "Tensor Data" flat or nested row-major) and the
//     error object {"error": $string} of every failure.
//   - Triton's extensions (triton-inference-server/server, docs/protocol/):
//     binary tensor data (extension_binary_data.md), classification
//     (extension_classification.md), statistics (extension_statistics.md)
//     and the model repository (extension_model_repository.md).
//
// A case is a request and its expected outcome: a status class (as HTTP
// statuses; a gRPC client maps them as oip.go's contract says) and, for a
// success, a check of the answer. Each transport supplies an oipClient
// that plays a stock client on its wire; the cases run unchanged over
// every client: HTTP with JSON tensors and HTTP with binary tensors here,
// gRPC where that transport adds its client to conformanceClients.

// confInput is one input tensor of a case.
type confInput struct {
	name, datatype string
	shape          []int64
	fp32           []float32
	bytes          [][]byte
	// nested sends JSON data nested by the shape instead of flat (binary
	// data is always flat).
	nested bool
}

// confOutput is one output a case asks for; classification 0 asks for the
// scores.
type confOutput struct {
	name           string
	classification int64
}

type confRequest struct {
	id      string
	inputs  []confInput
	outputs []confOutput
}

// confTensor is one output tensor of an answer, decoded by the client.
type confTensor struct {
	name, datatype string
	shape          []int64
	fp32           []float32
	bools          []bool
	bytes          [][]byte
}

// confAnswer is an inference answer: status and error, or the response.
type confAnswer struct {
	status                  int
	err                     string
	id, model, modelVersion string
	outputs                 []confTensor
}

// confMetadata is a model metadata answer.
type confMetadata struct {
	status          int
	err             string
	name, platform  string
	versions        []string
	inputs, outputs []string // "name datatype [shape]"
}

// confStat is one $model_stat of a statistics answer.
type confStat struct {
	name, version                              string
	inferenceCount, executionCount             uint64
	success, fail, queue, input, infer, output [2]uint64 // count, ns
	lastInference                              int64
}

// oipClient plays a stock client of one transport.
type oipClient interface {
	// live and ready return the status and the answer's flag.
	live(t *testing.T) (int, bool)
	ready(t *testing.T) (int, bool)
	extensions(t *testing.T) (int, []string)
	modelMetadata(t *testing.T, model, version string) confMetadata
	modelReady(t *testing.T, model, version string) (int, bool)
	infer(t *testing.T, model, version string, req confRequest) confAnswer
	stats(t *testing.T, model, version string) (int, []confStat)
	// class is the status by which the client tells a case's status.
	class(status int) int
}

// conformanceClients returns the clients of every transport, each talking
// to server s.
func conformanceClients(t *testing.T, s *Server) map[string]oipClient {
	ts := httptest.NewServer(s.Public)
	t.Cleanup(ts.Close)
	clients := map[string]oipClient{
		"http-json":   &httpClient{url: ts.URL},
		"http-binary": &httpClient{url: ts.URL, binary: true},
	}
	maps.Copy(clients, grpcConfClients(t, s))
	return clients
}

// confCase is one inference case.
type confCase struct {
	name           string
	model, version string
	req            confRequest
	status         int
	// has is a part of the error message (failures), check inspects a
	// success.
	has   string
	check func(t *testing.T, a confAnswer)
}

// confFixture is what the cases compare with: the reference classifiers
// of each version (by version string), encoded test images and their
// preprocessed tensors.
type confFixture struct {
	ref     map[string]*infer.Classifier
	pngs    [][]byte
	tensors []float32 // the pngs preprocessed, [N, 1, 28, 28] flat
}

func newConfFixture(t *testing.T, dirs map[string]string) *confFixture {
	_, test := testModel(t)
	f := &confFixture{ref: map[string]*infer.Classifier{}}
	for v, dir := range dirs {
		ref, err := infer.Open(context.Background(), dir, append(cpuOptions, infer.WithTopK(100))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ref.Close() })
		f.ref[v] = ref
	}
	for _, i := range []int{3, 14, 15} {
		img := fashionImage(test, i)
		f.pngs = append(f.pngs, encodePNG(t, img))
		f.tensors = append(f.tensors, f.ref["1"].Manifest().Preprocess.Image(img)...)
	}
	return f
}

// want returns version's reference distances [N, K] and results of the
// fixture's images.
func (f *confFixture) want(t *testing.T, version string) ([]float32, []infer.Result) {
	ref := f.ref[version]
	k := len(ref.Classes())
	dist := make([]float32, len(f.pngs)*k)
	var results []infer.Result
	for i, b := range f.pngs {
		res, err := ref.ClassifyReader(context.Background(), bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
		for _, p := range res.Predictions {
			for col, c := range ref.Classes() {
				if c.ID == p.ClassID {
					dist[i*k+col] = p.Distance
				}
			}
		}
	}
	return dist, results
}

// output returns the answer's output name, failing the test without it.
func (a confAnswer) output(t *testing.T, name string) confTensor {
	t.Helper()
	for _, o := range a.outputs {
		if o.name == name {
			return o
		}
	}
	t.Fatalf("answer has no output %q: %+v", name, a)
	return confTensor{}
}

// inferCases are the inference cases against a server of model "fmnist"
// whose latest version is latest (its reference in f): the answers, then
// the failures.
func inferCases(t *testing.T, f *confFixture, latest string) []confCase {
	return append(inferAnswerCases(f, latest), inferFailureCases(f)...)
}

// imagesInput is a BYTES tensor "image" of f's first n PNGs.
func imagesInput(f *confFixture, n int) confInput {
	return confInput{name: "image", datatype: "BYTES", shape: []int64{int64(n)}, bytes: f.pngs[:n]}
}

// tensorInput is an FP32 tensor "input" of f's first n preprocessed images.
func tensorInput(f *confFixture, n int) confInput {
	return confInput{name: "input", datatype: "FP32", shape: []int64{int64(n), 1, 28, 28}, fp32: f.tensors[:n*784]}
}

// poisonedInput is tensorInput of one image with value v at pixel 400.
func poisonedInput(f *confFixture, v float32) confInput {
	x := tensorInput(f, 1)
	x.fp32 = slices.Clone(x.fp32)
	x.fp32[400] = v
	return x
}

// outputsNamed asks for the outputs of these names.
func outputsNamed(names ...string) []confOutput {
	var o []confOutput
	for _, n := range names {
		o = append(o, confOutput{name: n})
	}
	return o
}

// distancesOf checks the distance output [N, K] of the first n images
// against the reference of version.
func distancesOf(f *confFixture, n int, version string) func(*testing.T, confAnswer) {
	return func(t *testing.T, a confAnswer) {
		want, _ := f.want(t, version)
		k := len(f.ref[version].Classes())
		o := a.output(t, "distance")
		if o.datatype != "FP32" || fmt.Sprint(o.shape) != fmt.Sprintf("[%d %d]", n, k) || !closeTo(o.fp32, want[:n*k]) {
			t.Errorf("distance %s %v %v, want FP32 [%d %d] %v", o.datatype, o.shape, o.fp32, n, k, want[:n*k])
		}
		if a.model != "fmnist" || a.modelVersion != version {
			t.Errorf("model %q version %q, want fmnist %s", a.model, a.modelVersion, version)
		}
	}
}

// inferAnswerCases are the requests answered 200, checked against f's
// references.
func inferAnswerCases(f *confFixture, latest string) []confCase {
	return []confCase{
		// inference_rest.md, "Inference Request JSON Object": a BYTES batch,
		// the id echoed, one output asked for.
		{name: "images", model: "fmnist", req: confRequest{id: "req-1", inputs: []confInput{imagesInput(f, 3)}, outputs: outputsNamed("distance")}, status: 200,
			check: func(t *testing.T, a confAnswer) {
				distancesOf(f, 3, latest)(t, a)
				if a.id != "req-1" || len(a.outputs) != 1 {
					t.Errorf("id %q, %d outputs: want req-1 and only distance", a.id, len(a.outputs))
				}
			}},
		{name: "images [N,1] nested", model: "fmnist", req: confRequest{inputs: []confInput{{name: "image", datatype: "BYTES", shape: []int64{2, 1}, bytes: f.pngs[:2], nested: true}}, outputs: outputsNamed("distance")},
			status: 200, check: distancesOf(f, 2, latest)},
		{name: "tensor flat", model: "fmnist", version: "1", req: confRequest{inputs: []confInput{tensorInput(f, 3)}, outputs: outputsNamed("distance")}, status: 200, check: distancesOf(f, 3, "1")},
		{name: "tensor nested", model: "fmnist", req: confRequest{inputs: []confInput{{name: "input", datatype: "FP32", shape: []int64{2, 1, 28, 28}, fp32: f.tensors[:2*784], nested: true}}, outputs: outputsNamed("distance")},
			status: 200, check: distancesOf(f, 2, latest)},
		// "Inference Request JSON Object": no outputs named, every output.
		{name: "default outputs", model: "fmnist", req: confRequest{inputs: []confInput{imagesInput(f, 2)}}, status: 200,
			check: func(t *testing.T, a confAnswer) {
				var got []string
				for _, o := range a.outputs {
					got = append(got, fmt.Sprintf("%s %s %v", o.name, o.datatype, o.shape))
				}
				if fmt.Sprint(got) != "[distance FP32 [2 3] unknown_score FP32 [2] unknown BOOL [2]]" {
					t.Errorf("outputs %v", got)
				}
				_, res := f.want(t, latest)
				u, s := a.output(t, "unknown"), a.output(t, "unknown_score")
				for i := range 2 {
					if u.bools[i] != res[i].Unknown || math.Abs(float64(s.fp32[i])-res[i].UnknownScore) > 1e-4*max(1, res[i].UnknownScore) {
						t.Errorf("image %d: unknown %v score %v, want %v %v", i, u.bools[i], s.fp32[i], res[i].Unknown, res[i].UnknownScore)
					}
				}
			}},
		{name: "output subset", model: "fmnist", req: confRequest{inputs: []confInput{imagesInput(f, 1)}, outputs: outputsNamed("unknown")}, status: 200,
			check: func(t *testing.T, a confAnswer) {
				if len(a.outputs) != 1 || a.outputs[0].name != "unknown" || fmt.Sprint(a.outputs[0].bools) != "[false]" {
					t.Errorf("outputs %+v", a.outputs)
				}
			}},
		// extension_classification.md: "value:index:label", best first.
		{name: "classification", model: "fmnist", req: confRequest{inputs: []confInput{imagesInput(f, 2)}, outputs: []confOutput{{name: "distance", classification: 2}}}, status: 200,
			check: func(t *testing.T, a confAnswer) {
				_, res := f.want(t, latest)
				o := a.output(t, "distance")
				if o.datatype != "BYTES" || fmt.Sprint(o.shape) != "[2 2]" || len(o.bytes) != 4 {
					t.Fatalf("classification output %s %v %q", o.datatype, o.shape, o.bytes)
				}
				for i := range 2 {
					for r := range 2 {
						parts := strings.SplitN(string(o.bytes[i*2+r]), ":", 3)
						p := res[i].Predictions[r]
						value, err := strconv.ParseFloat(parts[0], 64)
						if len(parts) != 3 || err != nil || parts[2] != p.Name || math.Abs(value-float64(p.Distance)) > 1e-5*max(1, math.Abs(value)) {
							t.Errorf("image %d rank %d: %q, want %v:_:%s", i, r, o.bytes[i*2+r], p.Distance, p.Name)
						}
					}
				}
			}},
		// A version named in the path answers with that version's classes.
		{name: "classification version 1", model: "fmnist", version: "1", req: confRequest{inputs: []confInput{imagesInput(f, 1)}, outputs: []confOutput{{name: "distance", classification: 1}}}, status: 200,
			check: func(t *testing.T, a confAnswer) {
				_, res := f.want(t, "1")
				o := a.output(t, "distance")
				if a.modelVersion != "1" || len(o.bytes) != 1 || !strings.HasSuffix(string(o.bytes[0]), ":"+res[0].Predictions[0].Name) {
					t.Errorf("version %q: %q, want version 1's class %s", a.modelVersion, o.bytes, res[0].Predictions[0].Name)
				}
			}},
	}
}

// inferFailureCases are the requests refused: the error object, with the
// status of its class.
func inferFailureCases(f *confFixture) []confCase {
	return []confCase{
		// Failures: the error object, with the status of its class.
		{name: "model not served", model: "other", req: confRequest{inputs: []confInput{imagesInput(f, 1)}}, status: 404, has: `model "other" is not served`},
		{name: "version not served", model: "fmnist", version: "7", req: confRequest{inputs: []confInput{imagesInput(f, 1)}}, status: 404, has: "version 7 is not served"},
		{name: "version not a number", model: "fmnist", version: "v1", req: confRequest{inputs: []confInput{imagesInput(f, 1)}}, status: 400, has: `version "v1"`},
		{name: "no inputs", model: "fmnist", req: confRequest{}, status: 400, has: "0 input tensors"},
		{name: "two inputs", model: "fmnist", req: confRequest{inputs: []confInput{imagesInput(f, 1), tensorInput(f, 1)}}, status: 400, has: "2 input tensors"},
		{name: "unknown input", model: "fmnist", req: confRequest{inputs: []confInput{{name: "pixels", datatype: "FP32", shape: []int64{1}, fp32: []float32{1}}}}, status: 400, has: `unknown input "pixels"`},
		{name: "image not BYTES", model: "fmnist", req: confRequest{inputs: []confInput{{name: "image", datatype: "FP32", shape: []int64{1}, fp32: []float32{1}}}}, status: 400, has: "want BYTES"},
		{name: "tensor not FP32", model: "fmnist", req: confRequest{inputs: []confInput{{name: "input", datatype: "BYTES", shape: []int64{1, 1, 28, 28}, bytes: [][]byte{{1}}}}}, status: 400, has: "want FP32"},
		{name: "tensor shape", model: "fmnist", req: confRequest{inputs: []confInput{{name: "input", datatype: "FP32", shape: []int64{1, 1, 28, 27}, fp32: f.tensors[:756]}}}, status: 400, has: "want [N, 1, 28, 28]"},
		{name: "image shape", model: "fmnist", req: confRequest{inputs: []confInput{{name: "image", datatype: "BYTES", shape: []int64{1, 2}, bytes: f.pngs[:2]}}}, status: 400, has: "want [N] or [N, 1]"},
		{name: "empty batch", model: "fmnist", req: confRequest{inputs: []confInput{{name: "image", datatype: "BYTES", shape: []int64{0}}}}, status: 400, has: "want positive dimensions"},
		{name: "fewer images than the shape", model: "fmnist", req: confRequest{inputs: []confInput{{name: "image", datatype: "BYTES", shape: []int64{2}, bytes: f.pngs[:1]}}}, status: 400, has: "says 2"},
		{name: "fewer values than the shape", model: "fmnist", req: confRequest{inputs: []confInput{{name: "input", datatype: "FP32", shape: []int64{2, 1, 28, 28}, fp32: f.tensors[:784]}}}, status: 400, has: "[2 1 28 28]"},
		{name: "lying shape", model: "fmnist", req: confRequest{inputs: []confInput{{name: "input", datatype: "FP32", shape: []int64{40000, 1, 28, 28}, fp32: []float32{0.5}}}}, status: 400, has: "input"},
		{name: "not an image", model: "fmnist", req: confRequest{inputs: []confInput{{name: "image", datatype: "BYTES", shape: []int64{1}, bytes: [][]byte{[]byte("hello")}}}}, status: 415, has: "unknown image format"},
		{name: "truncated image", model: "fmnist", req: confRequest{inputs: []confInput{{name: "image", datatype: "BYTES", shape: []int64{1}, bytes: [][]byte{f.pngs[0][:len(f.pngs[0])/2]}}}}, status: 400, has: "png"},
		{name: "image too large", model: "fmnist", req: confRequest{inputs: []confInput{{name: "image", datatype: "BYTES", shape: []int64{1}, bytes: [][]byte{pngHeader(100000, 100000)}}}}, status: 413, has: "100000x100000"},
		{name: "unknown output", model: "fmnist", req: confRequest{inputs: []confInput{imagesInput(f, 1)}, outputs: outputsNamed("logits")}, status: 400, has: `unknown output "logits"`},
		{name: "probabilities uncalibrated", model: "fmnist", req: confRequest{inputs: []confInput{imagesInput(f, 1)}, outputs: outputsNamed("probabilities")}, status: 400, has: "no calibration"},
		{name: "classification negative", model: "fmnist", req: confRequest{inputs: []confInput{imagesInput(f, 1)}, outputs: []confOutput{{name: "distance", classification: -1}}}, status: 400, has: "classification -1"},
		// Issue reproducers: a value of 1e25 in a preprocessed input, and
		// the largest finite float32. The answer is either correct and
		// readable (the test model's network saturates on 1e25: finite
		// scores) or, where a score overflows float32, the client's fault
		// named (400), never a 200 without a body or a 500.
		{name: "value 1e25", model: "fmnist", req: confRequest{inputs: []confInput{poisonedInput(f, 1e25)}}, status: 200, check: finiteAnswer},
		{name: "value 1e25 classification", model: "fmnist", req: confRequest{inputs: []confInput{poisonedInput(f, 1e25)}, outputs: []confOutput{{name: "distance", classification: 1}}}, status: 200, check: finiteAnswer},
		{name: "value max float32", model: "fmnist", req: confRequest{inputs: []confInput{poisonedInput(f, math.MaxFloat32)}}, status: 400, has: `input "input"`},
	}
}

// finiteAnswer checks that every number of an answer is finite.
func finiteAnswer(t *testing.T, a confAnswer) {
	if len(a.outputs) == 0 {
		t.Fatal("no outputs")
	}
	for _, o := range a.outputs {
		for i, x := range o.fp32 {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Errorf("output %s element %d is %v", o.name, i, x)
			}
		}
	}
}

// runConformance runs the cases and the metadata, health and statistics
// checks over every client of s.
func runConformance(t *testing.T, s *Server, f *confFixture, latest string, versions []string) {
	for transport, c := range conformanceClients(t, s) {
		t.Run(transport, func(t *testing.T) {
			// inference_rest.md, "Health" and "Server Metadata".
			if code, live := c.live(t); code != 200 || !live {
				t.Errorf("live: %d %v", code, live)
			}
			if code, ready := c.ready(t); code != 200 || !ready {
				t.Errorf("ready: %d %v", code, ready)
			}
			if code, exts := c.extensions(t); code != 200 || !slices.Contains(exts, "classification") || !slices.Contains(exts, "binary_tensor_data") || !slices.Contains(exts, "statistics") {
				t.Errorf("server metadata: %d extensions %v", code, exts)
			}
			// "Model Metadata" and "Model Ready", with and without a version.
			for _, v := range append([]string{""}, versions...) {
				m := c.modelMetadata(t, "fmnist", v)
				wantVersions := fmt.Sprint(versions)
				if v != "" {
					wantVersions = "[" + v + "]"
				}
				if m.status != 200 || m.name != "fmnist" || m.platform == "" || fmt.Sprint(m.versions) != wantVersions ||
					fmt.Sprint(m.inputs) != "[image BYTES [-1] input FP32 [-1 1 28 28]]" ||
					fmt.Sprint(m.outputs) != "[distance FP32 [-1 3] unknown_score FP32 [-1] unknown BOOL [-1]]" {
					t.Errorf("model metadata version %q: %+v", v, m)
				}
				if code, ready := c.modelReady(t, "fmnist", v); code != 200 || !ready {
					t.Errorf("model ready version %q: %d %v", v, code, ready)
				}
			}
			if m := c.modelMetadata(t, "other", ""); m.status != 404 || !strings.Contains(m.err, "not served") {
				t.Errorf("metadata of a model not served: %+v", m)
			}
			if code, _ := c.modelReady(t, "fmnist", "9"); code != 404 {
				t.Errorf("ready of a version not served: %d", code)
			}
			_, before := c.stats(t, "fmnist", latest)
			succeeded, failed, images := 0, 0, uint64(0)
			for _, cc := range inferCases(t, f, latest) {
				t.Run(cc.name, func(t *testing.T) {
					a := c.infer(t, cc.model, cc.version, cc.req)
					if a.status != c.class(cc.status) || cc.status != 200 && !strings.Contains(a.err, cc.has) {
						t.Fatalf("%d %q, want %d and an error naming %q", a.status, a.err, cc.status, cc.has)
					}
					if cc.check != nil {
						cc.check(t, a)
					}
				})
				if cc.model == "fmnist" && (cc.version == "" || cc.version == latest) {
					if cc.status == 200 {
						succeeded++
						images += uint64(cc.req.inputs[0].shape[0])
					} else if cc.status != 404 && cc.version != "v1" {
						failed++
					}
				}
			}
			// extension_statistics.md: the latest version's counts grew by
			// the cases that reached it, and every phase took time.
			code, after := c.stats(t, "fmnist", latest)
			if code != 200 || len(after) != 1 || len(before) != 1 {
				t.Fatalf("stats: %d %+v", code, after)
			}
			b, a := before[0], after[0]
			if a.name != "fmnist" || a.version != latest ||
				a.success[0]-b.success[0] != uint64(succeeded) || a.fail[0]-b.fail[0] != uint64(failed) ||
				a.inferenceCount-b.inferenceCount != images || a.executionCount-b.executionCount != uint64(succeeded) ||
				a.success[1] <= b.success[1] || a.infer[1] <= b.infer[1] || a.lastInference == 0 {
				t.Errorf("stats: %+v then %+v; want %d more successes of %d images, %d more failures", b, a, succeeded, images, failed)
			}
			if code, all := c.stats(t, "", ""); code != 200 || len(all) != len(versions) {
				t.Errorf("stats of every model: %d %+v, want one per version %v", code, all, versions)
			}
			if code, _ := c.stats(t, "other", ""); code != 404 {
				t.Errorf("stats of a model not served: %d", code)
			}
		})
	}
}

// TestConformanceOneModel runs the suite against one model directory
// served as "fmnist".
func TestConformanceOneModel(t *testing.T) {
	dir, _ := testModel(t)
	cfg := testConfig(dir)
	cfg.ModelName = "fmnist"
	s := newTestServer(t, cfg)
	runConformance(t, s, newConfFixture(t, map[string]string{"1": dir}), "1", []string{"1"})
}

// TestConformanceRepository runs the suite against a repository serving
// fmnist versions 1 and 2 (its classes renamed), the latest being 2.
func TestConformanceRepository(t *testing.T) {
	root := testRepository(t)
	cfg := testConfig("")
	cfg.Model, cfg.Repository, cfg.Policy = "", root, VersionPolicy{Latest: 2}
	s := newTestServer(t, cfg)
	f := newConfFixture(t, map[string]string{"1": root + "/fmnist/1", "2": root + "/fmnist/2"})
	runConformance(t, s, f, "2", []string{"1", "2"})
}

// b64 is standard base64, as JSON carries images.
func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
