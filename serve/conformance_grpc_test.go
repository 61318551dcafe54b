package serve

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/bicyc/bicyc/serve/oippb"
)

// grpcConfClient plays a gRPC client of the protocol (KServe's
// grpc_predict_v2.proto with Triton's statistics extension) for the
// conformance suite, with the client generated from the protocol's
// schema: with raw, it sends every input as raw_input_contents (as
// Triton's tritonclient.grpc does) and reads raw_output_contents;
// otherwise it sends and reads typed contents (InferTensorContents).
// A failed call's gRPC code is reported as the HTTP status of its class
// (codeStatus), the mapping of oip.go's contract read backwards.
type grpcConfClient struct {
	c   oippb.GRPCInferenceServiceClient
	raw bool
}

// codeStatus is the HTTP status of a gRPC code's class: InvalidArgument
// stands for 400, 413 and 415 alike (class reads the cases' statuses so).
func codeStatus(err error) int {
	switch status.Code(err) {
	case codes.OK:
		return http.StatusOK
	case codes.InvalidArgument:
		return http.StatusBadRequest
	case codes.NotFound:
		return http.StatusNotFound
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.Canceled:
		return statusClientClosed
	}
	return http.StatusInternalServerError
}

// class is the status a gRPC client can tell a case's status by: the
// request's faults are all InvalidArgument.
func (c *grpcConfClient) class(status int) int {
	if status == http.StatusRequestEntityTooLarge || status == http.StatusUnsupportedMediaType {
		return http.StatusBadRequest
	}
	return status
}

// class is the status itself: HTTP tells every status apart.
func (c *httpClient) class(status int) int { return status }

func (c *grpcConfClient) live(t *testing.T) (int, bool) {
	r, err := c.c.ServerLive(context.Background(), &oippb.ServerLiveRequest{})
	return codeStatus(err), r.GetLive()
}

func (c *grpcConfClient) ready(t *testing.T) (int, bool) {
	r, err := c.c.ServerReady(context.Background(), &oippb.ServerReadyRequest{})
	return codeStatus(err), r.GetReady()
}

func (c *grpcConfClient) extensions(t *testing.T) (int, []string) {
	r, err := c.c.ServerMetadata(context.Background(), &oippb.ServerMetadataRequest{})
	if err == nil && (r.Name == "" || r.Version == "") {
		t.Errorf("server metadata without name or version: %v", r)
	}
	return codeStatus(err), r.GetExtensions()
}

func (c *grpcConfClient) modelMetadata(t *testing.T, model, version string) confMetadata {
	r, err := c.c.ModelMetadata(context.Background(), &oippb.ModelMetadataRequest{Name: model, Version: version})
	m := confMetadata{status: codeStatus(err), err: status.Convert(err).Message()}
	if err != nil {
		return m
	}
	m.name, m.platform, m.versions = r.Name, r.Platform, r.Versions
	for _, in := range r.Inputs {
		m.inputs = append(m.inputs, fmt.Sprintf("%s %s %v", in.Name, in.Datatype, in.Shape))
	}
	for _, o := range r.Outputs {
		m.outputs = append(m.outputs, fmt.Sprintf("%s %s %v", o.Name, o.Datatype, o.Shape))
	}
	return m
}

func (c *grpcConfClient) modelReady(t *testing.T, model, version string) (int, bool) {
	r, err := c.c.ModelReady(context.Background(), &oippb.ModelReadyRequest{Name: model, Version: version})
	return codeStatus(err), r.GetReady()
}

func (c *grpcConfClient) infer(t *testing.T, model, version string, r confRequest) confAnswer {
	t.Helper()
	req := &oippb.ModelInferRequest{ModelName: model, ModelVersion: version, Id: r.id}
	for _, in := range r.inputs {
		tensor := &oippb.ModelInferRequest_InferInputTensor{Name: in.name, Datatype: in.datatype, Shape: in.shape}
		if c.raw {
			req.RawInputContents = append(req.RawInputContents, append(rawFP32(in.fp32), rawBytes(in.bytes...)...))
		} else {
			tensor.Contents = &oippb.InferTensorContents{Fp32Contents: in.fp32, BytesContents: in.bytes}
		}
		req.Inputs = append(req.Inputs, tensor)
	}
	for _, o := range r.outputs {
		out := &oippb.ModelInferRequest_InferRequestedOutputTensor{Name: o.name}
		if o.classification != 0 {
			out.Parameters = map[string]*oippb.InferParameter{"classification": {ParameterChoice: &oippb.InferParameter_Int64Param{Int64Param: o.classification}}}
		}
		req.Outputs = append(req.Outputs, out)
	}
	resp, err := c.c.ModelInfer(context.Background(), req)
	a := confAnswer{status: codeStatus(err), err: status.Convert(err).Message()}
	if err != nil {
		return a
	}
	a.id, a.model, a.modelVersion = resp.Id, resp.ModelName, resp.ModelVersion
	if c.raw != (len(resp.RawOutputContents) > 0) || c.raw && len(resp.RawOutputContents) != len(resp.Outputs) {
		t.Fatalf("%d raw_output_contents for %d outputs, for a request with raw contents %v", len(resp.RawOutputContents), len(resp.Outputs), c.raw)
	}
	for i, o := range resp.Outputs {
		ct := confTensor{name: o.Name, datatype: o.Datatype, shape: o.Shape}
		if c.raw {
			b := resp.RawOutputContents[i]
			switch o.Datatype {
			case "FP32":
				ct.fp32 = fromRawFP32(b)
			case "BOOL":
				for _, x := range b {
					ct.bools = append(ct.bools, x != 0)
				}
			case "BYTES":
				for len(b) >= 4 {
					n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16 | int(b[3])<<24
					ct.bytes = append(ct.bytes, b[4:4+n])
					b = b[4+n:]
				}
			}
		} else {
			ct.fp32, ct.bools, ct.bytes = o.Contents.GetFp32Contents(), o.Contents.GetBoolContents(), o.Contents.GetBytesContents()
		}
		a.outputs = append(a.outputs, ct)
	}
	return a
}

func (c *grpcConfClient) stats(t *testing.T, model, version string) (int, []confStat) {
	r, err := c.c.ModelStatistics(context.Background(), &oippb.ModelStatisticsRequest{Name: model, Version: version})
	var out []confStat
	for _, m := range r.GetModelStats() {
		is := m.InferenceStats
		d := func(x *oippb.StatisticDuration) [2]uint64 { return [2]uint64{x.GetCount(), x.GetNs()} }
		out = append(out, confStat{name: m.Name, version: m.Version, inferenceCount: m.InferenceCount, executionCount: m.ExecutionCount,
			success: d(is.GetSuccess()), fail: d(is.GetFail()), queue: d(is.GetQueue()), input: d(is.GetComputeInput()), infer: d(is.GetComputeInfer()), output: d(is.GetComputeOutput()),
			lastInference: int64(m.LastInference)})
	}
	return codeStatus(err), out
}

// grpcConfClients returns the gRPC clients of the suite on s's public gRPC
// server: typed contents and raw contents.
func grpcConfClients(t *testing.T, s *Server) map[string]oipClient {
	c := oippb.NewGRPCInferenceServiceClient(grpcClient(t, s, false))
	return map[string]oipClient{
		"grpc-typed": &grpcConfClient{c: c},
		"grpc-raw":   &grpcConfClient{c: c, raw: true},
	}
}

// grpcRepositoryClient plays a client of Triton's repository RPCs on the
// admin gRPC server.
type grpcRepositoryClient struct {
	c oippb.GRPCInferenceServiceClient
}

func (c *grpcRepositoryClient) index(t *testing.T, ready bool) (int, []string) {
	r, err := c.c.RepositoryIndex(context.Background(), &oippb.RepositoryIndexRequest{Ready: ready})
	if err != nil {
		return codeStatus(err), []string{status.Convert(err).Message()}
	}
	var out []string
	for _, m := range r.Models {
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s", m.Name, m.Version, m.State)))
	}
	return http.StatusOK, out
}

func (c *grpcRepositoryClient) load(t *testing.T, model, policy string) (int, string) {
	req := &oippb.RepositoryModelLoadRequest{ModelName: model}
	if policy != "" {
		req.Parameters = map[string]*oippb.ModelRepositoryParameter{"version_policy": {ParameterChoice: &oippb.ModelRepositoryParameter_StringParam{StringParam: policy}}}
	}
	_, err := c.c.RepositoryModelLoad(context.Background(), req)
	return codeStatus(err), status.Convert(err).Message()
}

func (c *grpcRepositoryClient) unload(t *testing.T, model string) (int, string) {
	_, err := c.c.RepositoryModelUnload(context.Background(), &oippb.RepositoryModelUnloadRequest{ModelName: model})
	return codeStatus(err), status.Convert(err).Message()
}

// grpcRepositoryClients returns the gRPC repository client on s's admin
// gRPC server.
func grpcRepositoryClients(t *testing.T, s *Server) map[string]oipRepositoryClient {
	return map[string]oipRepositoryClient{"grpc": &grpcRepositoryClient{oippb.NewGRPCInferenceServiceClient(grpcClient(t, s, true))}}
}
