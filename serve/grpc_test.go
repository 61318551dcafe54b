package serve

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/serve/oippb"

	"github.com/bicyc/bicyc/data"
)

// The gRPC tests play the client of the protocol's gRPC API: a Go client
// generated from the protocol's schema (oippb), over a real loopback
// listener, sending the messages as the specification defines them
// (KServe's grpc_predict_v2.proto: typed contents or raw_input_contents,
// one entry per input, BYTES elements length-prefixed when raw; Triton's
// statistics, repository and classification extensions), and the standard
// health client.

// grpcClient serves s's gRPC API (admin: with the repository RPCs) on a
// loopback listener and returns a client connection, both closed when the
// test ends.
func grpcClient(t *testing.T, s *Server, admin bool) *grpc.ClientConn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := s.NewGRPC(testTimeouts, admin)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// grpcCode returns err's gRPC code and message.
func grpcCode(err error) (codes.Code, string) {
	st, _ := status.FromError(err)
	return st.Code(), st.Message()
}

// imagesTensor is a BYTES input "image" of encoded images in typed
// contents.
func imagesTensor(encoded ...[]byte) *oippb.ModelInferRequest_InferInputTensor {
	return &oippb.ModelInferRequest_InferInputTensor{
		Name: "image", Datatype: "BYTES", Shape: []int64{int64(len(encoded))},
		Contents: &oippb.InferTensorContents{BytesContents: encoded},
	}
}

// rawBytes lays out BYTES elements as raw contents: each a 4-byte
// little-endian length, then its bytes.
func rawBytes(elems ...[]byte) []byte {
	var out []byte
	for _, e := range elems {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(e)))
		out = append(out, e...)
	}
	return out
}

// rawFP32 lays out FP32 values as raw contents, little-endian.
func rawFP32(x []float32) []byte {
	out := make([]byte, 0, 4*len(x))
	for _, v := range x {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
	}
	return out
}

// fromRawFP32 reads raw FP32 contents.
func fromRawFP32(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// TestGRPCSingleModel drives every RPC of the protocol's gRPC API against
// one model: health, metadata, readiness, inference with typed and raw
// contents (encoded images and preprocessed tensors) against the
// library's answers, the classification extension, statistics, the
// standard health service, metrics, and the errors of malformed requests.
func TestGRPCSingleModel(t *testing.T) {
	dir, test := testModel(t)
	cfg := testConfig(dir)
	cfg.ModelName = "fmnist"
	cfg.MaxBody = 256 << 10
	s := newTestServer(t, cfg)
	conn := grpcClient(t, s, false)
	c := oippb.NewGRPCInferenceServiceClient(conn)
	ctx := context.Background()
	ref, err := infer.Open(ctx, dir, append(cpuOptions, infer.WithTopK(100))...)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	k := len(ref.Classes())

	checkGRPCMetadata(t, ctx, c, k)
	encoded := [][]byte{encodePNG(t, fashionImage(test, 11)), encodePNG(t, fashionImage(test, 12))}
	want := distances(t, ref, encoded)
	checkGRPCInferImages(t, ctx, c, ref, encoded, want, k)
	checkGRPCInferTensors(t, ctx, c, ref, test, encoded, want)
	checkGRPCMalformed(t, ctx, conn, c, encoded)
	checkGRPCStatistics(t, ctx, c, s)
	checkGRPCHealth(t, ctx, conn, c, s, imagesTensor(encoded[0]))
}

// checkGRPCMetadata checks the server's and the model's metadata and
// readiness, TestGRPCSingleModel's first step.
func checkGRPCMetadata(t *testing.T, ctx context.Context, c oippb.GRPCInferenceServiceClient, k int) {
	if r, err := c.ServerLive(ctx, &oippb.ServerLiveRequest{}); err != nil || !r.Live {
		t.Errorf("ServerLive: %v %v", r, err)
	}
	if r, err := c.ServerReady(ctx, &oippb.ServerReadyRequest{}); err != nil || !r.Ready {
		t.Errorf("ServerReady: %v %v", r, err)
	}
	meta, err := c.ServerMetadata(ctx, &oippb.ServerMetadataRequest{})
	if err != nil || meta.Name != "bicyc" || meta.Version == "" || !slices.Contains(meta.Extensions, "classification") || !slices.Contains(meta.Extensions, "statistics") || slices.Contains(meta.Extensions, "model_repository") {
		t.Errorf("ServerMetadata: %v %v", meta, err)
	}
	for _, tc := range []struct {
		name, version string
		ready         bool
		code          codes.Code
	}{{"fmnist", "", true, codes.OK}, {"fmnist", "1", true, codes.OK}, {"fmnist", "2", false, codes.NotFound}, {"other", "", false, codes.NotFound}, {"fmnist", "x", false, codes.InvalidArgument}} {
		r, err := c.ModelReady(ctx, &oippb.ModelReadyRequest{Name: tc.name, Version: tc.version})
		if code, _ := grpcCode(err); code != tc.code || r.GetReady() != tc.ready {
			t.Errorf("ModelReady %q %q: %v %v, want ready %v, code %v", tc.name, tc.version, r, err, tc.ready, tc.code)
		}
	}
	mm, err := c.ModelMetadata(ctx, &oippb.ModelMetadataRequest{Name: "fmnist"})
	if err != nil {
		t.Fatal(err)
	}
	tensors := func(ts []*oippb.ModelMetadataResponse_TensorMetadata) string {
		var out []string
		for _, x := range ts {
			out = append(out, fmt.Sprint(x.Name, " ", x.Datatype, " ", x.Shape))
		}
		return strings.Join(out, "; ")
	}
	if got, want := tensors(mm.Inputs), "image BYTES [-1]; input FP32 [-1 1 28 28]"; got != want || mm.Name != "fmnist" || mm.Platform != "bicyc_onnxruntime" || !slices.Equal(mm.Versions, []string{"1"}) {
		t.Errorf("ModelMetadata: %v, inputs %q, want %q", mm, got, want)
	}
	if got, want := tensors(mm.Outputs), "distance FP32 [-1 "+strconv.Itoa(k)+"]; unknown_score FP32 [-1]; unknown BOOL [-1]"; got != want {
		t.Errorf("ModelMetadata outputs %q, want %q", got, want)
	}
	if _, err := c.ModelMetadata(ctx, &oippb.ModelMetadataRequest{Name: "other"}); status.Code(err) != codes.NotFound {
		t.Errorf("ModelMetadata of a model not served: %v, want NotFound", err)
	}
}

// checkGRPCInferImages classifies two encoded images in typed and in raw
// contents: the outputs asked for, equal to the reference's.
func checkGRPCInferImages(t *testing.T, ctx context.Context, c oippb.GRPCInferenceServiceClient, ref *infer.Classifier, encoded [][]byte, want []float32, k int) {
	// Two encoded images in typed contents, all outputs.
	r, err := c.ModelInfer(ctx, &oippb.ModelInferRequest{ModelName: "fmnist", Id: "req-1", Inputs: []*oippb.ModelInferRequest_InferInputTensor{imagesTensor(encoded...)}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ModelName != "fmnist" || r.ModelVersion != "1" || r.Id != "req-1" || len(r.Outputs) != 3 || len(r.RawOutputContents) != 0 {
		t.Fatalf("ModelInfer: %v", r)
	}
	if o := r.Outputs[0]; o.Name != "distance" || o.Datatype != "FP32" || fmt.Sprint(o.Shape) != "[2 "+strconv.Itoa(k)+"]" || !closeTo(o.Contents.GetFp32Contents(), want) {
		t.Errorf("distance: %v, want %v", o, want)
	}
	var wantUnknown []bool
	var wantScores []float32
	for _, b := range encoded {
		res, err := ref.ClassifyReader(ctx, strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		wantUnknown, wantScores = append(wantUnknown, res.Unknown), append(wantScores, float32(res.UnknownScore))
	}
	if o := r.Outputs[1]; o.Name != "unknown_score" || o.Datatype != "FP32" || fmt.Sprint(o.Shape) != "[2]" || !closeTo(o.Contents.GetFp32Contents(), wantScores) {
		t.Errorf("unknown_score: %v, want %v", o, wantScores)
	}
	if o := r.Outputs[2]; o.Name != "unknown" || o.Datatype != "BOOL" || fmt.Sprint(o.Shape) != "[2]" || !slices.Equal(o.Contents.GetBoolContents(), wantUnknown) {
		t.Errorf("unknown: %v, want %v", o, wantUnknown)
	}

	// The same images as raw contents (as Triton's clients send): the
	// answer is raw too. An empty contents message beside them is no
	// contents.
	r, err = c.ModelInfer(ctx, &oippb.ModelInferRequest{
		ModelName: "fmnist", ModelVersion: "1",
		Inputs:           []*oippb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "BYTES", Shape: []int64{2, 1}, Contents: &oippb.InferTensorContents{}}},
		Outputs:          []*oippb.ModelInferRequest_InferRequestedOutputTensor{{Name: "unknown"}, {Name: "distance"}},
		RawInputContents: [][]byte{rawBytes(encoded...)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Outputs) != 2 || len(r.RawOutputContents) != 2 || r.Outputs[0].Name != "unknown" || r.Outputs[0].Contents != nil {
		t.Fatalf("raw ModelInfer: %v", r)
	}
	if got := r.RawOutputContents[0]; len(got) != 2 || (got[0] == 1) != wantUnknown[0] || (got[1] == 1) != wantUnknown[1] {
		t.Errorf("raw unknown %v, want %v", got, wantUnknown)
	}
	if got := fromRawFP32(r.RawOutputContents[1]); !closeTo(got, want) {
		t.Errorf("raw distance %v, want %v", got, want)
	}
}

// checkGRPCInferTensors classifies the images preprocessed by the client,
// typed and raw, and asks for Triton's classification extension.
func checkGRPCInferTensors(t *testing.T, ctx context.Context, c oippb.GRPCInferenceServiceClient, ref *infer.Classifier, test *data.Dataset, encoded [][]byte, want []float32) {
	// The images preprocessed by the client, FP32 [2, 1, 28, 28], typed
	// and raw.
	var pixels []float32
	for _, i := range []int{11, 12} {
		pixels = append(pixels, ref.Manifest().Preprocess.Image(fashionImage(test, i))...)
	}
	fp32 := &oippb.ModelInferRequest_InferInputTensor{Name: "input", Datatype: "FP32", Shape: []int64{2, 1, 28, 28}}
	for _, raw := range []bool{false, true} {
		req := &oippb.ModelInferRequest{ModelName: "fmnist", Inputs: []*oippb.ModelInferRequest_InferInputTensor{fp32},
			Outputs: []*oippb.ModelInferRequest_InferRequestedOutputTensor{{Name: "distance"}}}
		fp32.Contents = nil
		if raw {
			req.RawInputContents = [][]byte{rawFP32(pixels)}
		} else {
			fp32.Contents = &oippb.InferTensorContents{Fp32Contents: pixels}
		}
		r, err := c.ModelInfer(ctx, req)
		if err != nil {
			t.Fatalf("FP32 (raw %v): %v", raw, err)
		}
		got := r.Outputs[0].Contents.GetFp32Contents()
		if raw {
			got = fromRawFP32(r.RawOutputContents[0])
		}
		if !closeTo(got, want) {
			t.Errorf("FP32 (raw %v): distances %v, want %v", raw, got, want)
		}
	}

	// Triton's classification extension: the top 2 classes as strings.
	r, err := c.ModelInfer(ctx, &oippb.ModelInferRequest{ModelName: "fmnist",
		Inputs: []*oippb.ModelInferRequest_InferInputTensor{imagesTensor(encoded[0])},
		Outputs: []*oippb.ModelInferRequest_InferRequestedOutputTensor{{Name: "distance",
			Parameters: map[string]*oippb.InferParameter{"classification": {ParameterChoice: &oippb.InferParameter_Int64Param{Int64Param: 2}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	best, err := ref.ClassifyReader(ctx, strings.NewReader(string(encoded[0])))
	if err != nil {
		t.Fatal(err)
	}
	if o := r.Outputs[0]; o.Datatype != "BYTES" || fmt.Sprint(o.Shape) != "[1 2]" || len(o.Contents.GetBytesContents()) != 2 ||
		!strings.HasSuffix(string(o.Contents.BytesContents[0]), ":"+best.Predictions[0].Name) {
		t.Errorf("classification: %v, want the best class %q first", o, best.Predictions[0].Name)
	}
}

// checkGRPCMalformed sends malformed requests: each gets the right code
// and a message naming the problem, at once.
func checkGRPCMalformed(t *testing.T, ctx context.Context, conn *grpc.ClientConn, c oippb.GRPCInferenceServiceClient, encoded [][]byte) {
	// Malformed requests: the right code and a message naming the problem,
	// at once.
	good := imagesTensor(encoded[0])
	lying := &oippb.ModelInferRequest_InferInputTensor{Name: "input", Datatype: "FP32", Shape: []int64{40000, 1, 28, 28}}
	huge := make([]float32, 784)
	for i := range huge {
		huge[i] = math.MaxFloat32
	}
	classification := func(v *oippb.InferParameter) []*oippb.ModelInferRequest_InferRequestedOutputTensor {
		return []*oippb.ModelInferRequest_InferRequestedOutputTensor{{Name: "distance", Parameters: map[string]*oippb.InferParameter{"classification": v}}}
	}
	for _, tc := range []struct {
		what string
		req  *oippb.ModelInferRequest
		code codes.Code
		msg  string
	}{
		{"model not served", &oippb.ModelInferRequest{ModelName: "other", Inputs: []*oippb.ModelInferRequest_InferInputTensor{good}}, codes.NotFound, `"other" is not served`},
		{"version not served", &oippb.ModelInferRequest{ModelName: "fmnist", ModelVersion: "2", Inputs: []*oippb.ModelInferRequest_InferInputTensor{good}}, codes.NotFound, "version"},
		{"bad version", &oippb.ModelInferRequest{ModelName: "fmnist", ModelVersion: "v1", Inputs: []*oippb.ModelInferRequest_InferInputTensor{good}}, codes.InvalidArgument, "v1"},
		{"no input", &oippb.ModelInferRequest{ModelName: "fmnist"}, codes.InvalidArgument, "0 input tensors"},
		{"unknown input", &oippb.ModelInferRequest{ModelName: "fmnist", Inputs: []*oippb.ModelInferRequest_InferInputTensor{{Name: "x", Datatype: "BYTES", Shape: []int64{1}}}}, codes.InvalidArgument, `unknown input "x"`},
		{"wrong datatype", &oippb.ModelInferRequest{ModelName: "fmnist", Inputs: []*oippb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "FP32", Shape: []int64{1}, Contents: good.Contents}}}, codes.InvalidArgument, "want BYTES"},
		{"wrong shape", &oippb.ModelInferRequest{ModelName: "fmnist", Inputs: []*oippb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: "FP32", Shape: []int64{1, 1, 28, 27}}}}, codes.InvalidArgument, "want [N, 1, 28, 28]"},
		{"count unlike shape", &oippb.ModelInferRequest{ModelName: "fmnist", Inputs: []*oippb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "BYTES", Shape: []int64{2}, Contents: good.Contents}}}, codes.InvalidArgument, "1 bytes_contents, its shape [2] says 2"},
		{"no contents", &oippb.ModelInferRequest{ModelName: "fmnist", Inputs: []*oippb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "BYTES", Shape: []int64{1}}}}, codes.InvalidArgument, "no contents"},
		{"contents and raw", &oippb.ModelInferRequest{ModelName: "fmnist", Inputs: []*oippb.ModelInferRequest_InferInputTensor{good}, RawInputContents: [][]byte{rawBytes(encoded[0])}}, codes.InvalidArgument, "one of the two"},
		{"raw per input", &oippb.ModelInferRequest{ModelName: "fmnist", Inputs: []*oippb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "BYTES", Shape: []int64{1}}}, RawInputContents: [][]byte{rawBytes(encoded[0]), nil}}, codes.InvalidArgument, "2 raw_input_contents for 1 inputs"},
		{"raw length lies", &oippb.ModelInferRequest{ModelName: "fmnist", Inputs: []*oippb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "BYTES", Shape: []int64{1}}}, RawInputContents: [][]byte{rawBytes(encoded[0])[:40]}}, codes.InvalidArgument, "declares"},
		{"lying shape", &oippb.ModelInferRequest{ModelName: "fmnist", Inputs: []*oippb.ModelInferRequest_InferInputTensor{lying}, RawInputContents: [][]byte{make([]byte, 100)}}, codes.InvalidArgument, "at most"},
		{"not an image", &oippb.ModelInferRequest{ModelName: "fmnist", Inputs: []*oippb.ModelInferRequest_InferInputTensor{imagesTensor([]byte("not an image"))}}, codes.InvalidArgument, "element 0"},
		{"score beyond float32", &oippb.ModelInferRequest{ModelName: "fmnist", Inputs: []*oippb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: "FP32", Shape: []int64{1, 1, 28, 28}, Contents: &oippb.InferTensorContents{Fp32Contents: huge}}}}, codes.InvalidArgument, `input "input"`},
		{"unknown output", &oippb.ModelInferRequest{ModelName: "fmnist", Inputs: []*oippb.ModelInferRequest_InferInputTensor{good}, Outputs: []*oippb.ModelInferRequest_InferRequestedOutputTensor{{Name: "logits"}}}, codes.InvalidArgument, `unknown output "logits"`},
		{"classification 0", &oippb.ModelInferRequest{ModelName: "fmnist", Inputs: []*oippb.ModelInferRequest_InferInputTensor{good}, Outputs: classification(&oippb.InferParameter{ParameterChoice: &oippb.InferParameter_Int64Param{Int64Param: 0}})}, codes.InvalidArgument, "classification"},
		{"classification string", &oippb.ModelInferRequest{ModelName: "fmnist", Inputs: []*oippb.ModelInferRequest_InferInputTensor{good}, Outputs: classification(&oippb.InferParameter{ParameterChoice: &oippb.InferParameter_StringParam{StringParam: "3"}})}, codes.InvalidArgument, "classification"},
		{"over the message limit", &oippb.ModelInferRequest{ModelName: "fmnist", Inputs: []*oippb.ModelInferRequest_InferInputTensor{imagesTensor(make([]byte, 300<<10))}}, codes.ResourceExhausted, "larger than max"},
	} {
		start := time.Now()
		_, err := c.ModelInfer(ctx, tc.req)
		code, msg := grpcCode(err)
		if code != tc.code || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: %v %q, want %v containing %q", tc.what, code, msg, tc.code, tc.msg)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s: answered in %v", tc.what, took)
		}
	}
	// An RPC of Triton's API that bicyc does not implement.
	if err := conn.Invoke(ctx, "/inference.GRPCInferenceService/ModelConfig", &oippb.ModelMetadataRequest{Name: "fmnist"}, &oippb.ModelMetadataResponse{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("ModelConfig: %v, want Unimplemented", err)
	}
	if _, err := c.RepositoryIndex(ctx, &oippb.RepositoryIndexRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("RepositoryIndex on the public listener: %v, want PermissionDenied", err)
	}
}

// checkGRPCStatistics checks the model's statistics and the gRPC request
// counter after the requests of TestGRPCSingleModel's earlier steps.
func checkGRPCStatistics(t *testing.T, ctx context.Context, c oippb.GRPCInferenceServiceClient, s *Server) {
	// Statistics: the successful requests above, their images, and the
	// failed ones that reached the model.
	stats, err := c.ModelStatistics(ctx, &oippb.ModelStatisticsRequest{Name: "fmnist"})
	if err != nil || len(stats.ModelStats) != 1 {
		t.Fatalf("ModelStatistics: %v %v", stats, err)
	}
	st := stats.ModelStats[0]
	if is := st.InferenceStats; st.Version != "1" || is.Success.Count != 5 || st.InferenceCount != 9 || st.ExecutionCount != 5 || is.Fail.Count == 0 || is.ComputeInfer.Ns == 0 || st.LastInference == 0 {
		t.Errorf("ModelStatistics: %v", st)
	}
	if _, err := c.ModelStatistics(ctx, &oippb.ModelStatisticsRequest{Name: "other"}); status.Code(err) != codes.NotFound {
		t.Errorf("ModelStatistics of a model not served: %v, want NotFound", err)
	}

	// The calls are counted in /metrics.
	families, err := s.cfg.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counted := 0.0
	for _, f := range families {
		if f.GetName() != "bicyc_infer_grpc_requests_total" {
			continue
		}
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["method"] == "ModelInfer" && labels["code"] == "OK" {
				counted = m.Counter.GetValue()
			}
		}
	}
	if counted != 5 {
		t.Errorf("bicyc_infer_grpc_requests_total{method=ModelInfer,code=OK} = %v, want 5", counted)
	}
}

// checkGRPCHealth checks that the standard health service follows
// readiness, and that a draining server refuses inference (good is a valid
// input tensor).
func checkGRPCHealth(t *testing.T, ctx context.Context, conn *grpc.ClientConn, c oippb.GRPCInferenceServiceClient, s *Server, good *oippb.ModelInferRequest_InferInputTensor) {
	// The standard health service follows readiness.
	health := healthpb.NewHealthClient(conn)
	check := func(service string) (healthpb.HealthCheckResponse_ServingStatus, codes.Code) {
		r, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		return r.GetStatus(), status.Code(err)
	}
	for _, service := range []string{"", "inference.GRPCInferenceService", "live"} {
		if st, code := check(service); st != healthpb.HealthCheckResponse_SERVING || code != codes.OK {
			t.Errorf("health %q: %v %v, want SERVING", service, st, code)
		}
	}
	if _, code := check("other"); code != codes.NotFound {
		t.Errorf("health of an unknown service: %v, want NotFound", code)
	}
	s.ready.Store(false) // as Serve's shutdown does
	if st, _ := check(""); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health while draining: %v, want NOT_SERVING", st)
	}
	if st, _ := check("live"); st != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("liveness while draining: %v, want SERVING", st)
	}
	if r, err := c.ServerReady(ctx, &oippb.ServerReadyRequest{}); err != nil || r.Ready {
		t.Errorf("ServerReady while draining: %v %v", r, err)
	}
	if _, err := c.ModelInfer(ctx, &oippb.ModelInferRequest{ModelName: "fmnist", Inputs: []*oippb.ModelInferRequest_InferInputTensor{good}}); status.Code(err) != codes.Unavailable {
		t.Errorf("ModelInfer while draining: %v, want Unavailable", err)
	}
}

// TestGRPCRepository drives a two-version repository over gRPC: the
// admin server's repository RPCs (index with reasons, load with a version
// policy, unload, load again), inference on each version, and statistics
// per version; the public server advertises no repository extension.
func TestGRPCRepository(t *testing.T) {
	root := testRepository(t)
	_, test := testModel(t)
	cfg := testConfig("")
	cfg.Model, cfg.Repository = "", root
	s := newTestServer(t, cfg)
	admin := oippb.NewGRPCInferenceServiceClient(grpcClient(t, s, true))
	public := oippb.NewGRPCInferenceServiceClient(grpcClient(t, s, false))
	ctx := context.Background()
	img := encodePNG(t, fashionImage(test, 5))

	for _, tc := range []struct {
		c    oippb.GRPCInferenceServiceClient
		want bool
	}{{admin, true}, {public, false}} {
		meta, err := tc.c.ServerMetadata(ctx, &oippb.ServerMetadataRequest{})
		if err != nil || slices.Contains(meta.Extensions, "model_repository") != tc.want {
			t.Errorf("ServerMetadata: %v %v, want model_repository %v", meta, err, tc.want)
		}
	}
	if got, want := grpcIndex(t, ctx, admin, false), "broken/1 UNAVAILABLE, fmnist/1 UNAVAILABLE, fmnist/2 READY"; got != want {
		t.Errorf("index: %q, want %q", got, want)
	}
	if got, want := grpcIndex(t, ctx, admin, true), "fmnist/2 READY"; got != want {
		t.Errorf("index of the ready: %q, want %q", got, want)
	}
	latest := grpcBest(t, ctx, public, img, "")
	if !strings.HasPrefix(latest, "2 v2-") {
		t.Fatalf("latest version answers %q, want version 2's renamed classes", latest)
	}
	if got := grpcBest(t, ctx, public, img, "1"); got != "NotFound" {
		t.Errorf("version 1 before it is loaded: %q", got)
	}

	if _, err := admin.RepositoryModelLoad(ctx, &oippb.RepositoryModelLoadRequest{ModelName: "fmnist", Parameters: versionPolicyParam("latest:2")}); err != nil {
		t.Fatal(err)
	}
	if mm, err := public.ModelMetadata(ctx, &oippb.ModelMetadataRequest{Name: "fmnist"}); err != nil || !slices.Equal(mm.Versions, []string{"1", "2"}) {
		t.Errorf("after latest:2: %v %v", mm, err)
	}
	v1 := grpcBest(t, ctx, public, img, "1")
	if !strings.HasPrefix(v1, "1 ") || strings.Contains(v1, "v2-") {
		t.Errorf("version 1 answers %q, version 2 %q: want version 1's own class names", v1, latest)
	}
	if r, err := public.ModelReady(ctx, &oippb.ModelReadyRequest{Name: "fmnist", Version: "1"}); err != nil || !r.Ready {
		t.Errorf("ModelReady version 1: %v %v", r, err)
	}
	stats, err := admin.ModelStatistics(ctx, &oippb.ModelStatisticsRequest{Name: "fmnist"})
	if err != nil || len(stats.ModelStats) != 2 || stats.ModelStats[0].Version != "1" || stats.ModelStats[0].InferenceCount != 1 || stats.ModelStats[1].InferenceCount != 1 {
		t.Errorf("ModelStatistics per version: %v %v", stats, err)
	}

	checkGRPCLoadFailures(t, ctx, admin, public)

	if _, err := admin.RepositoryModelUnload(ctx, &oippb.RepositoryModelUnloadRequest{ModelName: "fmnist"}); err != nil {
		t.Fatal(err)
	}
	if _, err := public.ModelReady(ctx, &oippb.ModelReadyRequest{Name: "fmnist"}); status.Code(err) != codes.NotFound {
		t.Errorf("ModelReady after unload: %v, want NotFound", err)
	}
	if got := grpcBest(t, ctx, public, img, ""); got != "NotFound" {
		t.Errorf("inference after unload: %q, want NotFound", got)
	}
	if _, err := admin.RepositoryModelUnload(ctx, &oippb.RepositoryModelUnloadRequest{ModelName: "fmnist"}); status.Code(err) != codes.NotFound {
		t.Errorf("unload twice: %v, want NotFound", err)
	}
	if _, err := admin.RepositoryModelLoad(ctx, &oippb.RepositoryModelLoadRequest{ModelName: "fmnist"}); err != nil {
		t.Fatal(err)
	}
	if got := grpcBest(t, ctx, public, img, ""); got != latest {
		t.Errorf("after loading again: %q, want %q", got, latest)
	}
}

// grpcIndex returns the admin server's repository index (only the ready
// versions, with ready) as "name/version STATE" items; a version not ready
// must say why.
func grpcIndex(t *testing.T, ctx context.Context, admin oippb.GRPCInferenceServiceClient, ready bool) string {
	t.Helper()
	r, err := admin.RepositoryIndex(ctx, &oippb.RepositoryIndexRequest{Ready: ready})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range r.Models {
		out = append(out, m.Name+"/"+m.Version+" "+m.State)
		if m.State != "READY" && m.Reason == "" {
			t.Errorf("index: %v without a reason", m)
		}
	}
	return strings.Join(out, ", ")
}

// grpcBest returns "version label" of the best class of img on a version
// of model fmnist ("" the latest), or the error's code.
func grpcBest(t *testing.T, ctx context.Context, public oippb.GRPCInferenceServiceClient, img []byte, version string) string {
	t.Helper()
	r, err := public.ModelInfer(ctx, &oippb.ModelInferRequest{ModelName: "fmnist", ModelVersion: version,
		Inputs: []*oippb.ModelInferRequest_InferInputTensor{imagesTensor(img)},
		Outputs: []*oippb.ModelInferRequest_InferRequestedOutputTensor{{Name: "distance",
			Parameters: map[string]*oippb.InferParameter{"classification": {ParameterChoice: &oippb.InferParameter_Int64Param{Int64Param: 1}}}}}})
	if err != nil {
		return status.Code(err).String()
	}
	label := string(r.Outputs[0].Contents.BytesContents[0])
	return r.ModelVersion + " " + label[strings.LastIndex(label, ":")+1:]
}

// versionPolicyParam is a load request's version_policy parameter.
func versionPolicyParam(p string) map[string]*oippb.ModelRepositoryParameter {
	return map[string]*oippb.ModelRepositoryParameter{"version_policy": {ParameterChoice: &oippb.ModelRepositoryParameter_StringParam{StringParam: p}}}
}

// checkGRPCLoadFailures sends load requests that must fail, each with its
// code and a message naming the problem; the public server loads nothing.
func checkGRPCLoadFailures(t *testing.T, ctx context.Context, admin, public oippb.GRPCInferenceServiceClient) {
	for _, tc := range []struct {
		what string
		req  *oippb.RepositoryModelLoadRequest
		code codes.Code
		msg  string
	}{
		{"a version that does not verify", &oippb.RepositoryModelLoadRequest{ModelName: "broken"}, codes.Internal, "broken"},
		{"a bad policy", &oippb.RepositoryModelLoadRequest{ModelName: "fmnist", Parameters: versionPolicyParam("newest")}, codes.InvalidArgument, "newest"},
		{"a parameter bicyc does not read", &oippb.RepositoryModelLoadRequest{ModelName: "fmnist", Parameters: map[string]*oippb.ModelRepositoryParameter{"config": {ParameterChoice: &oippb.ModelRepositoryParameter_StringParam{StringParam: "{}"}}}}, codes.InvalidArgument, "version_policy"},
		{"a bad name", &oippb.RepositoryModelLoadRequest{ModelName: "../x"}, codes.InvalidArgument, "model name"},
	} {
		_, err := admin.RepositoryModelLoad(ctx, tc.req)
		if code, msg := grpcCode(err); code != tc.code || !strings.Contains(msg, tc.msg) {
			t.Errorf("load %s: %v %q, want %v containing %q", tc.what, code, msg, tc.code, tc.msg)
		}
	}
	if _, err := public.RepositoryModelLoad(ctx, &oippb.RepositoryModelLoadRequest{ModelName: "fmnist"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("load on the public server: %v, want PermissionDenied", err)
	}
	if _, err := public.RepositoryModelLoad(ctx, &oippb.RepositoryModelLoadRequest{ModelName: "fmnist"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("load on the public server: %v, want PermissionDenied", err)
	}
}

// TestServeGRPCShutdown runs Serve with both gRPC listeners: they answer
// until ctx ends, and then Serve lets the calls in flight finish, ends a
// health watch with NOT_SERVING, and returns nil well within the shutdown
// timeout.
func TestServeGRPCShutdown(t *testing.T) {
	dir, test := testModel(t)
	s := newTestServer(t, testConfig(dir))
	var l Listeners
	var addrs []string
	for _, ln := range []*net.Listener{&l.GRPC, &l.AdminGRPC} {
		var err error
		if *ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, (*ln).Addr().String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, l, testTimeouts, nil) }()
	var clients []oippb.GRPCInferenceServiceClient
	var watch grpc.ServerStreamingClient[healthpb.HealthCheckResponse]
	for _, addr := range addrs {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		clients = append(clients, oippb.NewGRPCInferenceServiceClient(conn))
		if watch == nil {
			if watch, err = healthpb.NewHealthClient(conn).Watch(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if r, err := watch.Recv(); err != nil || r.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health watch: %v %v, want SERVING", r, err)
	}
	if _, err := clients[1].RepositoryIndex(context.Background(), &oippb.RepositoryIndexRequest{}); err != nil {
		t.Errorf("RepositoryIndex on the admin listener: %v", err)
	}
	img := encodePNG(t, fashionImage(test, 1))
	// Many calls in flight when the shutdown starts: each one answers.
	errs := make(chan error, 16)
	for range cap(errs) {
		go func() {
			_, err := clients[0].ModelInfer(context.Background(), &oippb.ModelInferRequest{ModelName: DefaultModelName, Inputs: []*oippb.ModelInferRequest_InferInputTensor{imagesTensor(img)}})
			errs <- err
		}()
	}
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	cancel()
	answered := 0
	for range cap(errs) {
		switch err := <-errs; status.Code(err) {
		case codes.OK:
			answered++
		case codes.Unavailable: // sent after the listener closed, or refused while draining
		default:
			t.Errorf("a call during shutdown: %v", err)
		}
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if took := time.Since(start); took > testTimeouts.Shutdown/2 {
		t.Errorf("shutdown took %v: something held it to its timeout of %v", took, testTimeouts.Shutdown)
	}
	if r, err := watch.Recv(); err != nil || r.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health watch at shutdown: %v %v, want NOT_SERVING", r, err)
	}
	if _, err := watch.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("health watch after shutdown: %v, want the stream ended UNAVAILABLE", err)
	}
	if answered == 0 {
		t.Errorf("no call in flight answered")
	}
	if _, err := clients[0].ServerLive(context.Background(), &oippb.ServerLiveRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("after shutdown: %v, want Unavailable", err)
	}
}

// FuzzGRPCDecode decodes arbitrary ModelInfer messages, as the wire
// delivers them: decoding never panics, and a request it accepts holds
// exactly the elements its shapes declare, each FP32 element from 4 bytes
// the message carried (so no buffer outgrows the message).
func FuzzGRPCDecode(f *testing.F) {
	seed := func(r *oippb.ModelInferRequest) {
		b, err := proto.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	png := []byte("\x89PNG\r\n\x1a\n")
	seed(&oippb.ModelInferRequest{ModelName: "m", Inputs: []*oippb.ModelInferRequest_InferInputTensor{imagesTensor(png, png)}})
	seed(&oippb.ModelInferRequest{Inputs: []*oippb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "BYTES", Shape: []int64{2, 1}}}, RawInputContents: [][]byte{rawBytes(png, png)}})
	seed(&oippb.ModelInferRequest{Inputs: []*oippb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: "FP32", Shape: []int64{1, 1, 2, 2}}}, RawInputContents: [][]byte{rawFP32([]float32{1, 2, 3, 4})}})
	seed(&oippb.ModelInferRequest{Inputs: []*oippb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: "FP32", Shape: []int64{40000, 1, 2, 2}}}, RawInputContents: [][]byte{make([]byte, 16)}})
	seed(&oippb.ModelInferRequest{Inputs: []*oippb.ModelInferRequest_InferInputTensor{imagesTensor(png)},
		Outputs: []*oippb.ModelInferRequest_InferRequestedOutputTensor{{Name: "distance", Parameters: map[string]*oippb.InferParameter{"classification": {ParameterChoice: &oippb.InferParameter_DoubleParam{DoubleParam: 2.5}}}}}})
	f.Fuzz(func(t *testing.T, msg []byte) {
		var r oippb.ModelInferRequest
		if proto.Unmarshal(msg, &r) != nil {
			return
		}
		req, err := decodeGRPCRequest(&r, [3]int{1, 2, 2}, 1<<20)
		if err != nil {
			if oipStatus(err) != http.StatusBadRequest {
				t.Fatalf("a malformed request is not the client's fault: %v", err)
			}
			return
		}
		for _, in := range req.Inputs {
			n := int64(1)
			for _, d := range in.Shape {
				n *= d
			}
			if got := int64(len(in.FP32) + len(in.Bytes)); got != n || 4*len(in.FP32) > len(msg) {
				t.Fatalf("input %q shape %v: %d elements decoded from a %d-byte message", in.Name, in.Shape, got, len(msg))
			}
		}
	})
}

// TestGRPCLyingShapeAllocates decodes the lying request over gRPC,
// a shape of [40000, 1, 28, 28] FP32 (125 MB) with 100 bytes of raw
// contents: it is refused, and the decoding allocates a few hundred bytes
// (its error), never a buffer sized from the shape.
func TestGRPCLyingShapeAllocates(t *testing.T) {
	r := &oippb.ModelInferRequest{ModelName: "m", RawInputContents: [][]byte{make([]byte, 100)},
		Inputs: []*oippb.ModelInferRequest_InferInputTensor{{Name: "input", Datatype: "FP32", Shape: []int64{40000, 1, 28, 28}}}}
	const runs = 100
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		if _, err := decodeGRPCRequest(r, [3]int{1, 28, 28}, 32<<20); err == nil || !strings.Contains(err.Error(), "has 100 bytes") {
			t.Fatalf("the lying shape: %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	if perCall := (after.TotalAlloc - before.TotalAlloc) / runs; perCall > 4<<10 {
		t.Errorf("decoding the lying shape allocates %d bytes per call, want at most 4 KiB", perCall)
	} else {
		t.Logf("decoding the lying shape allocates %d bytes per call", perCall)
	}
}

// TestGRPCCollectsUnknown serves a model that answers every image unknown
// (a threshold below every score) with a Collector: images sent over
// gRPC, raw or typed, are answered unknown, counted in /metrics and saved
// byte for byte, as over REST.
func TestGRPCCollectsUnknown(t *testing.T) {
	dir, test := testModel(t)
	inbox := t.TempDir()
	collector, err := infer.NewCollector(inbox, 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(dir)
	cfg.Options = append(slices.Clone(cpuOptions), infer.WithUnknownThreshold(1e-9))
	cfg.Collector = collector
	s := newTestServer(t, cfg)
	c := oippb.NewGRPCInferenceServiceClient(grpcClient(t, s, false))
	pngs := [][]byte{encodePNG(t, fashionImage(test, 21)), encodePNG(t, fashionImage(test, 22))}
	r, err := c.ModelInfer(context.Background(), &oippb.ModelInferRequest{ModelName: DefaultModelName,
		Inputs:  []*oippb.ModelInferRequest_InferInputTensor{imagesTensor(pngs[0])},
		Outputs: []*oippb.ModelInferRequest_InferRequestedOutputTensor{{Name: "unknown"}}})
	if err != nil || fmt.Sprint(r.Outputs[0].Contents.GetBoolContents()) != "[true]" {
		t.Fatalf("typed: %v %v, want unknown", r, err)
	}
	r, err = c.ModelInfer(context.Background(), &oippb.ModelInferRequest{ModelName: DefaultModelName,
		Inputs:           []*oippb.ModelInferRequest_InferInputTensor{{Name: "image", Datatype: "BYTES", Shape: []int64{1}}},
		Outputs:          []*oippb.ModelInferRequest_InferRequestedOutputTensor{{Name: "unknown"}},
		RawInputContents: [][]byte{rawBytes(pngs[1])}})
	if err != nil || fmt.Sprint(r.RawOutputContents) != "[[1]]" {
		t.Fatalf("raw: %v %v, want unknown", r, err)
	}
	saved, err := os.ReadDir(inbox)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for _, e := range saved {
		b, err := os.ReadFile(filepath.Join(inbox, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, b)
	}
	if len(got) != 2 || !slices.ContainsFunc(got, func(b []byte) bool { return bytes.Equal(b, pngs[0]) }) || !slices.ContainsFunc(got, func(b []byte) bool { return bytes.Equal(b, pngs[1]) }) {
		t.Errorf("collected %d files, want the two images sent byte for byte", len(got))
	}
	if n := counterSum(t, s, "bicyc_infer_unknown_total"); n != 2 {
		t.Errorf("bicyc_infer_unknown_total %v, want 2", n)
	}
}

// counterSum returns the sum of a counter's series in s's registry.
func counterSum(t *testing.T, s *Server, name string) float64 {
	t.Helper()
	families, err := s.cfg.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.Metric {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
