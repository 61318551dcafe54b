// Package serve serves bicyc models over HTTP, for bicyc-infer serve and
// for any Go service that mounts its handlers.
//
// New opens and verifies the models a Config names — one model directory,
// or a model repository of versioned models — and returns a Server with
// two http.Handlers: Public, the API clients call, and Admin, the one
// operators call, to be served on a listener of its own (loopback, say).
// Serve runs both on listeners with graceful shutdown; a service with its
// own http.Server mounts the handlers instead.
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
// decoded (with the request's context, and JPEGs within data's scan
// budget) and classified, in runs of at most RunBatch images. A batch
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
package serve
