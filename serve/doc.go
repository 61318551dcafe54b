// Package serve serves bicyc models over HTTP and gRPC, for bicyc-infer
// serve and for any Go service that mounts its handlers.
//
// New opens and verifies the models a Config names — one model directory,
// or a model repository of versioned models — and returns a Server with
// two http.Handlers: Public, the API clients call, and Admin, the one
// operators call, to be served on a listener of its own (loopback, say).
// NewGRPC returns a grpc.Server with the same models over the Open
// Inference Protocol's gRPC API. Serve runs them all on listeners
// (Listeners) with graceful shutdown; a service with its own http.Server
// mounts the handlers instead, and serves NewGRPC's server itself.
//
// # Public API
//
//   - POST /v1/classify: bicyc's JSON API, one image as the body (or the
//     multipart field "image"), answered with infer.Result.
//   - The Open Inference Protocol (KServe v2) over REST: GET /v2,
//     /v2/health/live, /v2/health/ready, /v2/models/{name}[/versions/{v}]
//     (metadata: inputs, outputs and the classes in parameters),
//     .../ready, .../stats (Triton's statistics extension), and POST
//     .../infer with encoded images as a BYTES tensor "image" or a
//     preprocessed FP32 tensor "input" [N, C, H, W], as JSON or as Triton's
//     binary tensor data; outputs "distance" and "probabilities" [N, K]
//     (with Triton's classification extension, parameters.classification:
//     k), "unknown_score" and "unknown" [N], as JSON or binary data.
//     Every error, unknown routes included, is {"error": "..."}. The
//     protocol's logic is transport-free (oip.go): each transport decodes
//     its wire format into typed tensors and encodes the typed answer.
//   - GET /healthz, /readyz and Prometheus /metrics.
//
// # gRPC API
//
// The protocol's gRPC service, inference.GRPCInferenceService (package
// oippb: KServe's grpc_predict_v2.proto with Triton's statistics and
// repository messages): ServerLive, ServerReady, ModelReady,
// ServerMetadata, ModelMetadata, ModelInfer (the tensors above as typed
// InferTensorContents or raw_input_contents; the answer raw when the
// request was) and ModelStatistics, plus the repository RPCs on an admin
// server only (NewGRPC's admin). Errors are gRPC status codes of the
// core's classes (grpcError). Beside it: the standard health service
// grpc.health.v1 (SERVING while ready; "live" while the server answers)
// and server reflection, for grpcurl, grpc_health_probe and Kubernetes
// gRPC probes.
//
// # Admin API
//
// POST /admin/reload opens and verifies every model again and swaps it in
// only if it verifies. GET /v2 there advertises the repository extension
// where it applies. For a repository, Triton's repository extension:
// POST /v2/repository/index, /v2/repository/models/{name}/load (with an
// optional {"parameters": {"version_policy": "specific:2"}} to pin or roll
// back) and .../unload.
//
// # Limits
//
// A request's body is read whole first, at most Config.MaxBody bytes within
// Config.BodyTimeout, all bodies together under Config.MaxBuffered; only
// then does it wait, at most Config.QueueTimeout, for one of
// Config.MaxConcurrent classification slots, in which its images are
// decoded and prepared by infer's one path, DecodePrepare (with the
// request's context, and JPEGs within imaging's scan budget), and
// classified in runs of at most infer.RunBatch images (infer.ClassifyRuns).
// A batch
// whose answers would take more than Config.BatchMemory is refused (413).
// Slow uploads therefore never hold a slot, and the memory stays under
// Config.MemoryCeiling whatever the requests.
//
// # Swaps without failed requests
//
// Models are served from an immutable catalog swapped atomically. A load,
// reload or unload builds the new versions first (never serving a version
// that does not verify), swaps the catalog, and closes the versions it
// replaced; infer.Classifier.Close waits for the calls in flight, and a
// request that picked a version just before the swap runs again on its
// successor.
//
// May import: infer, repository, bundle, imaging, gauss, serve/oippb; never gorgonia, export, data, models, train (TestForbiddenImports).
package serve
