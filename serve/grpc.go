package serve

import (
	"context"
	"math"
	"net/http"
	"path"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/bicyc/bicyc/serve/oippb"
)

// The Open Inference Protocol over gRPC (package inference, service
// GRPCInferenceService; serve/oippb): a transport of the core in oip.go,
// as v2.go is over REST. It decodes the protocol's messages into the
// core's types and encodes the core's answers back; every rule of what a
// request may be, and every error class, is the core's.

// Health service names the gRPC health service answers (grpc.health.v1):
// "" (the server) and the inference service report readiness, SERVING
// exactly while GET /v2/health/ready answers 200 (NOT_SERVING while
// saturated, draining or with no model); "live" reports SERVING as long
// as the server answers at all, for liveness probes.
const (
	healthServer    = ""
	healthInference = "inference.GRPCInferenceService"
	healthLive      = "live"
)

// NewGRPC returns a gRPC server with the Open Inference Protocol's
// GRPCInferenceService on the server's models, the standard health
// service (grpc.health.v1) and server reflection, for grpcurl and other
// stock tools. Serve runs it on a listener of its own; a service that
// serves its own listeners calls NewGRPC and grpc.Server.Serve, and
// GracefulStop at shutdown.
//
// It applies the server's limits as HTTP does: a message over MaxBody
// bytes is refused (RESOURCE_EXHAUSTED) before it is read whole, a
// request's message counts against MaxBuffered while it is handled, it
// waits at most QueueTimeout for a slot, and t.Write bounds each call
// (the client's deadline, if shorter, applies); t.Read bounds a new
// connection's handshake (zero values: no bound of bicyc's own). Calls are counted in the server's Registry
// (bicyc_infer_grpc_requests_total and ..._duration_seconds).
//
// admin says whether the repository RPCs (RepositoryIndex,
// RepositoryModelLoad, RepositoryModelUnload: Triton's model repository
// extension) answer: give it only to the server of a private listener, as
// the Admin handler is. Elsewhere they answer PERMISSION_DENIED.
func (s *Server) NewGRPC(t Timeouts, admin bool) *grpc.Server {
	s.grpcOnce.Do(s.newGRPCMetrics)
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(min(s.maxBody, math.MaxInt32))),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: 2 * time.Minute}),
		grpc.ChainUnaryInterceptor(s.grpcCalls(t.Write)),
	}
	if t.Read > 0 {
		opts = append(opts, grpc.ConnectionTimeout(t.Read))
	}
	srv := grpc.NewServer(opts...)
	oippb.RegisterGRPCInferenceServiceServer(srv, &grpcService{s: s, admin: admin})
	healthpb.RegisterHealthServer(srv, &grpcHealth{s: s})
	reflection.Register(srv)
	return srv
}

// grpcMetrics count and time the gRPC calls, by method and status code.
type grpcMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	inFlight prometheus.Gauge
}

// newGRPCMetrics makes and registers the gRPC metrics, once per Server.
func (s *Server) newGRPCMetrics() {
	s.grpcMetrics = grpcMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bicyc_infer_grpc_requests_total",
			Help: "gRPC calls answered, by method and status code.",
		}, []string{"method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bicyc_infer_grpc_request_duration_seconds",
			Help:    "Time from the start of a gRPC call to its answer, by method and status code.",
			Buckets: latencyBuckets,
		}, []string{"method", "code"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bicyc_infer_grpc_requests_in_flight",
			Help: "gRPC calls being served.",
		}),
	}
	m := &s.grpcMetrics
	s.cfg.Registry.MustRegister(m.requests, m.latency, m.inFlight)
}

// grpcCalls is the interceptor of every unary call: it bounds the call to
// limit (0: no bound of its own), counts and times it, and turns a panic
// into INTERNAL instead of a dropped stream.
func (s *Server) grpcCalls(limit time.Duration) grpc.UnaryServerInterceptor {
	m := &s.grpcMetrics
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		start := time.Now()
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		if limit > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, limit)
			defer cancel()
		}
		defer func() {
			if p := recover(); p != nil {
				resp, err = nil, status.Errorf(codes.Internal, "internal error: %v", p)
			}
			method, code := path.Base(info.FullMethod), status.Code(err).String()
			m.requests.WithLabelValues(method, code).Inc()
			m.latency.WithLabelValues(method, code).Observe(time.Since(start).Seconds())
		}()
		return handler(ctx, req)
	}
}

// grpcError turns an error of the core into the gRPC status of its class
// (oipStatus), as the core's contract maps them.
func grpcError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	code := codes.Internal
	switch oipStatus(err) {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		code = codes.InvalidArgument
	case http.StatusNotFound:
		code = codes.NotFound
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		code = codes.DeadlineExceeded
	case statusClientClosed:
		code = codes.Canceled
	case http.StatusServiceUnavailable:
		code = codes.Unavailable
	}
	return status.Error(code, err.Error())
}

// grpcService implements GRPCInferenceService on the core.
type grpcService struct {
	oippb.UnimplementedGRPCInferenceServiceServer
	s     *Server
	admin bool
}

func (g *grpcService) ServerLive(context.Context, *oippb.ServerLiveRequest) (*oippb.ServerLiveResponse, error) {
	return &oippb.ServerLiveResponse{Live: true}, nil
}

func (g *grpcService) ServerReady(context.Context, *oippb.ServerReadyRequest) (*oippb.ServerReadyResponse, error) {
	return &oippb.ServerReadyResponse{Ready: g.s.oipServerReady()}, nil
}

// ModelReady answers NOT_FOUND for a model or version not served, as
// KServe's server does and as the REST API answers 404.
func (g *grpcService) ModelReady(_ context.Context, r *oippb.ModelReadyRequest) (*oippb.ModelReadyResponse, error) {
	ready, err := g.s.oipModelReady(r.Name, r.Version)
	if err != nil {
		return nil, grpcError(err)
	}
	return &oippb.ModelReadyResponse{Ready: ready}, nil
}

func (g *grpcService) ServerMetadata(context.Context, *oippb.ServerMetadataRequest) (*oippb.ServerMetadataResponse, error) {
	m := g.s.oipServerMeta(g.admin)
	return &oippb.ServerMetadataResponse{Name: m.Name, Version: m.Version, Extensions: m.Extensions}, nil
}

// ModelMetadata answers the model's tensors. The protocol's gRPC message
// has no parameters: the classes' order, which the HTTP metadata gives,
// is not here (the classification output names the classes).
func (g *grpcService) ModelMetadata(_ context.Context, r *oippb.ModelMetadataRequest) (*oippb.ModelMetadataResponse, error) {
	m, err := g.s.oipModelMeta(r.Name, r.Version)
	if err != nil {
		return nil, grpcError(err)
	}
	tensors := func(ts []tensorMetadata) []*oippb.ModelMetadataResponse_TensorMetadata {
		out := make([]*oippb.ModelMetadataResponse_TensorMetadata, len(ts))
		for i, t := range ts {
			out[i] = &oippb.ModelMetadataResponse_TensorMetadata{Name: t.Name, Datatype: t.Datatype, Shape: t.Shape}
		}
		return out
	}
	return &oippb.ModelMetadataResponse{
		Name: m.Name, Versions: m.Versions, Platform: m.Platform,
		Inputs: tensors(m.Inputs), Outputs: tensors(m.Outputs),
	}, nil
}

// ModelInfer decodes the request (every length checked against the
// declared shape before a buffer is sized from it), has the core classify
// it, and answers in the request's form: raw_output_contents for a request
// that sent raw_input_contents (as Triton's clients do), the typed
// contents otherwise.
func (g *grpcService) ModelInfer(ctx context.Context, r *oippb.ModelInferRequest) (*oippb.ModelInferResponse, error) {
	start := time.Now()
	s := g.s
	if !s.ready.Load() {
		return nil, grpcError(errShuttingDown)
	}
	v, err := s.oipFind(r.ModelName, r.ModelVersion)
	if err != nil {
		return nil, grpcError(err)
	}
	// The message is in memory already (at most MaxBody bytes, which gRPC
	// enforces); it counts against the bodies' budget while it waits.
	size := int64(proto.Size(r))
	if !s.bodies.take(size) {
		s.oipFailed(v, r.ModelName, start)
		return nil, grpcError(errBodiesFull)
	}
	defer s.bodies.give(size)
	req, err := decodeGRPCRequest(r, v.model.InputShape(), s.maxBody)
	if err != nil {
		s.oipFailed(v, r.ModelName, start)
		return nil, grpcError(err)
	}
	resp, err := s.oipInfer(ctx, r.ModelName, r.ModelVersion, req)
	if err != nil {
		return nil, grpcError(err)
	}
	return encodeGRPCResponse(resp, len(r.RawInputContents) > 0), nil
}

// decodeGRPCRequest decodes an inference request: each input is checked
// (oipCheckInput) against a model of input shape [C, H, W], then its
// elements are taken from its typed contents or from its entry of
// raw_input_contents, laid out as the binary tensor data extension's
// (little-endian; a BYTES element a 4-byte length and its bytes). No
// element is copied: the core reads the message's own slices.
func decodeGRPCRequest(r *oippb.ModelInferRequest, shape [3]int, limit int64) (*oipRequest, error) {
	raw := len(r.RawInputContents) > 0
	if raw && len(r.RawInputContents) != len(r.Inputs) {
		return nil, badRequestf("%d raw_input_contents for %d inputs: want one per input, in the order of the inputs", len(r.RawInputContents), len(r.Inputs))
	}
	req := &oipRequest{ID: r.Id}
	for i, in := range r.Inputs {
		t := oipTensor{Name: in.Name, Datatype: in.Datatype, Shape: in.Shape}
		count, err := oipCheckInput(&t, shape, limit)
		if err != nil {
			return nil, err
		}
		switch {
		case raw && proto.Size(in.Contents) > 0:
			// An empty contents message beside raw contents carries nothing.
			return nil, badRequestf("input %q has contents, and the request raw_input_contents: want one of the two", in.Name)
		case raw:
			b := r.RawInputContents[i]
			if t.Datatype == "FP32" && int64(len(b)) != 4*count {
				return nil, badRequestf("input %q: raw_input_contents[%d] has %d bytes, its shape %v of FP32 takes %d", in.Name, i, len(b), in.Shape, 4*count)
			}
			if err := decodeBinaryInput(&t, b, count); err != nil {
				return nil, err
			}
		case in.Contents == nil:
			return nil, badRequestf("input %q has no contents and the request no raw_input_contents", in.Name)
		case t.Datatype == "FP32":
			if n := int64(len(in.Contents.Fp32Contents)); n != count {
				return nil, badRequestf("input %q has %d fp32_contents, its shape %v says %d", in.Name, n, in.Shape, count)
			}
			t.FP32 = in.Contents.Fp32Contents
		default: // BYTES
			if n := int64(len(in.Contents.BytesContents)); n != count {
				return nil, badRequestf("input %q has %d bytes_contents, its shape %v says %d", in.Name, n, in.Shape, count)
			}
			t.Bytes = in.Contents.BytesContents
		}
		req.Inputs = append(req.Inputs, t)
	}
	for _, o := range r.Outputs {
		spec := oipOutputSpec{Name: o.Name}
		if p, ok := o.Parameters["classification"]; ok {
			k, err := oipClassification(o.Name, grpcParam(p))
			if err != nil {
				return nil, err
			}
			spec.Classification = k
		}
		req.Outputs = append(req.Outputs, spec)
	}
	return req, nil
}

// grpcParam returns a parameter's value as a Go value.
func grpcParam(p *oippb.InferParameter) any {
	switch c := p.GetParameterChoice().(type) {
	case *oippb.InferParameter_BoolParam:
		return c.BoolParam
	case *oippb.InferParameter_Int64Param:
		return c.Int64Param
	case *oippb.InferParameter_StringParam:
		return c.StringParam
	case *oippb.InferParameter_DoubleParam:
		return c.DoubleParam
	case *oippb.InferParameter_Uint64Param:
		return c.Uint64Param
	}
	return nil
}

// encodeGRPCResponse encodes the core's answer, its data as
// raw_output_contents (raw) or as each output's typed contents.
func encodeGRPCResponse(resp *oipResponse, raw bool) *oippb.ModelInferResponse {
	out := &oippb.ModelInferResponse{ModelName: resp.ModelName, ModelVersion: resp.ModelVersion, Id: resp.ID}
	for _, o := range resp.Outputs {
		t := &oippb.ModelInferResponse_InferOutputTensor{Name: o.Name, Datatype: o.Datatype, Shape: o.Shape}
		if raw {
			out.RawOutputContents = append(out.RawOutputContents, appendBinary(nil, o))
		} else {
			t.Contents = &oippb.InferTensorContents{Fp32Contents: o.FP32, BoolContents: o.Bool, BytesContents: o.Bytes}
		}
		out.Outputs = append(out.Outputs, t)
	}
	return out
}

func (g *grpcService) ModelStatistics(_ context.Context, r *oippb.ModelStatisticsRequest) (*oippb.ModelStatisticsResponse, error) {
	stats, err := g.s.oipModelStats(r.Name, r.Version)
	if err != nil {
		return nil, grpcError(err)
	}
	duration := func(d durationJSON) *oippb.StatisticDuration {
		return &oippb.StatisticDuration{Count: d.Count, Ns: d.NS}
	}
	out := &oippb.ModelStatisticsResponse{}
	for _, m := range stats {
		is := &m.InferenceStats
		out.ModelStats = append(out.ModelStats, &oippb.ModelStatistics{
			Name: m.Name, Version: m.Version, LastInference: uint64(max(m.LastInference, 0)),
			InferenceCount: m.InferenceCount, ExecutionCount: m.ExecutionCount,
			InferenceStats: &oippb.InferStatistics{
				Success: duration(is.Success), Fail: duration(is.Fail), Queue: duration(is.Queue),
				ComputeInput: duration(is.ComputeInput), ComputeInfer: duration(is.ComputeInfer), ComputeOutput: duration(is.ComputeOutput),
			},
		})
	}
	return out, nil
}

// errNotAdmin answers a repository RPC on a public listener.
var errNotAdmin = status.Error(codes.PermissionDenied, "the model repository RPCs answer on the admin gRPC listener only")

func (g *grpcService) RepositoryIndex(_ context.Context, r *oippb.RepositoryIndexRequest) (*oippb.RepositoryIndexResponse, error) {
	if !g.admin {
		return nil, errNotAdmin
	}
	entries, err := g.s.oipRepositoryIndex(r.Ready)
	if err != nil {
		return nil, grpcError(err)
	}
	out := &oippb.RepositoryIndexResponse{}
	for _, e := range entries {
		out.Models = append(out.Models, &oippb.RepositoryIndexResponse_ModelIndex{Name: e.Name, Version: e.Version, State: e.State, Reason: e.Reason})
	}
	return out, nil
}

// RepositoryModelLoad loads or reloads a model; its one parameter is
// version_policy, a string as on the HTTP API ("latest:2",
// "specific:1,3"). Triton's other load parameters (a configuration,
// model files) are refused: bicyc loads model directories as exported.
func (g *grpcService) RepositoryModelLoad(_ context.Context, r *oippb.RepositoryModelLoadRequest) (*oippb.RepositoryModelLoadResponse, error) {
	if !g.admin {
		return nil, errNotAdmin
	}
	policy := ""
	for key, p := range r.Parameters {
		s, ok := p.GetParameterChoice().(*oippb.ModelRepositoryParameter_StringParam)
		if key != "version_policy" || !ok {
			return nil, grpcError(badRequestf("load parameter %q: bicyc reads only version_policy, a string such as \"latest:2\" or \"specific:1,3\"", key))
		}
		policy = s.StringParam
	}
	if _, err := g.s.oipRepositoryLoad(r.ModelName, policy); err != nil {
		return nil, grpcError(err)
	}
	return &oippb.RepositoryModelLoadResponse{}, nil
}

func (g *grpcService) RepositoryModelUnload(_ context.Context, r *oippb.RepositoryModelUnloadRequest) (*oippb.RepositoryModelUnloadResponse, error) {
	if !g.admin {
		return nil, errNotAdmin
	}
	if err := g.s.oipRepositoryUnload(r.ModelName); err != nil {
		return nil, grpcError(err)
	}
	return &oippb.RepositoryModelUnloadResponse{}, nil
}

// grpcHealth is the standard health service on the server's readiness
// (see healthServer).
type grpcHealth struct {
	healthpb.UnimplementedHealthServer
	s *Server
}

// healthStatus returns the status of service, or false for a service it
// does not know.
func (h *grpcHealth) healthStatus(service string) (healthpb.HealthCheckResponse_ServingStatus, bool) {
	switch service {
	case healthLive:
		return healthpb.HealthCheckResponse_SERVING, true
	case healthServer, healthInference:
		if h.s.oipServerReady() {
			return healthpb.HealthCheckResponse_SERVING, true
		}
		return healthpb.HealthCheckResponse_NOT_SERVING, true
	}
	return healthpb.HealthCheckResponse_SERVICE_UNKNOWN, false
}

func (h *grpcHealth) Check(_ context.Context, r *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	st, ok := h.healthStatus(r.Service)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "unknown service %q: want %q, %q or %q", r.Service, healthServer, healthInference, healthLive)
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

func (h *grpcHealth) List(context.Context, *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	out := &healthpb.HealthListResponse{Statuses: map[string]*healthpb.HealthCheckResponse{}}
	for _, service := range []string{healthServer, healthInference, healthLive} {
		st, _ := h.healthStatus(service)
		out.Statuses[service] = &healthpb.HealthCheckResponse{Status: st}
	}
	return out, nil
}

// healthPoll is how often Watch looks at the readiness, which has no
// events of its own (saturation comes and goes with the load).
const healthPoll = 500 * time.Millisecond

// Watch sends the service's status at once and then each change, as the
// health protocol asks; an unknown service is SERVICE_UNKNOWN, not an
// error, so a watcher may wait for it. Once the server shuts down it sends
// that status and ends the stream (UNAVAILABLE), which a graceful stop
// would otherwise wait for.
func (h *grpcHealth) Watch(r *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	last := healthpb.HealthCheckResponse_ServingStatus(-1)
	tick := time.NewTicker(healthPoll)
	defer tick.Stop()
	for {
		if st, _ := h.healthStatus(r.Service); st != last {
			if err := stream.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
			last = st
		}
		if !h.s.ready.Load() {
			return status.Error(codes.Unavailable, errShuttingDown.Error())
		}
		select {
		case <-stream.Context().Done():
			return status.FromContextError(stream.Context().Err()).Err()
		case <-tick.C:
		}
	}
}
