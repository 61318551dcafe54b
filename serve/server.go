package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/infer"

	"github.com/bicyc/bicyc/repository"

	"github.com/bicyc/bicyc/names"
)

// Config says what a Server serves and within which limits. Exactly one of
// Model and Repository is set.
type Config struct {
	// Model is one model directory, served as ModelName, version 1;
	// Reload opens it again.
	Model string
	// ModelName names the Model on the Open Inference Protocol's paths
	// (/v2/models/{name}); empty means DefaultModelName.
	ModelName string
	// Repository is a model repository, DIR/<name>/<version>/ (see
	// Repository); every model in it is loaded at New, the versions Policy
	// selects.
	Repository string
	// Policy selects the versions of each repository model to serve; the
	// zero value serves the latest one.
	Policy VersionPolicy
	// Options open every model (infer.Open). The server ranks every class
	// itself (it adds infer.WithTopK), and answers /v1/classify with TopK
	// of them.
	Options []infer.Option
	// TopK is the number of classes /v1/classify answers; 0 means each
	// model's manifest top_k.
	TopK int
	// MaxBody is the largest request body in bytes; a declared
	// Content-Length over it gets 413 at once.
	MaxBody int64
	// MaxBuffered bounds the bytes of request bodies held in memory at
	// once, over all requests (503 beyond it); 0 means 4 x MaxBody.
	MaxBuffered int64
	// MaxConcurrent is the number of requests classified at once (the
	// classification slots); the rest wait up to QueueTimeout (503 after
	// it).
	MaxConcurrent int
	QueueTimeout  time.Duration
	// BodyTimeout limits the time to receive a body once the headers are
	// in (408 after it); 0 leaves only the http.Server's read timeout.
	BodyTimeout time.Duration
	// MaxPixels refuses images whose header declares more pixels (413);
	// 0 means infer.DefaultMaxPixels.
	MaxPixels int64
	// Collector, if not nil, keeps the images answered unknown.
	Collector *infer.Collector
	// Registry receives the server's metrics and the Go runtime and process
	// collectors, served on GET /metrics; nil means a new registry.
	Registry *prometheus.Registry
	// Log receives one line per reload, load, unload and collection
	// problem; nil discards them.
	Log io.Writer

	// open opens and verifies a model directory; nil means infer.Open with
	// Options (tests wrap it).
	open func(ctx context.Context, dir string) (model, error)
}

// DefaultModelName is the name a single Config.Model is served under.
const DefaultModelName = "bicyc"

// model is what the server needs of *infer.Classifier.
type model interface {
	DecodePrepare(ctx context.Context, r io.Reader) (infer.Input, string, error)
	InputFromTensor(values []float32) (infer.Input, error)
	ClassifyInputs(ctx context.Context, inputs []infer.Input) ([]infer.Result, error)
	InputShape() [3]int
	Classes() []bundle.Class
	Calibrated() bool
	ShortlistSize() int
	Manifest() bundle.Manifest
	Provider() infer.Provider
	UnknownThreshold() (threshold, acceptRate float64)
	Close() error
}

// Server serves bicyc models over HTTP: Public is the public API (the v1
// JSON API, the Open Inference Protocol, health and metrics), Admin the
// administrative one (reload, and the repository API), to be served on its
// own listener. Both are safe for concurrent use. The Server owns the
// models it opens: loads and reloads swap new ones in and close the old
// ones once their calls in flight have finished; Close releases them all.
//
// A classification request goes through three bounded stages: its body is
// read into memory (at most MaxBody bytes, within BodyTimeout, counted
// against the memory all bodies in flight may hold, MaxBuffered), then it
// waits up to QueueTimeout for one of MaxConcurrent slots, and only then
// are its images decoded and classified. A slow or stalled upload
// therefore holds a bounded part of the body memory for at most
// BodyTimeout, never a slot. An image answered unknown is counted and,
// with a Collector, saved from the body already in memory.
type Server struct {
	Public http.Handler
	Admin  http.Handler

	cfg          Config
	name         string // the single model's name; "" for a repository
	models       atomic.Pointer[catalog]
	loadMu       sync.Mutex             // one load, unload or reload at a time
	failures     map[string]string      // why each model's last load failed; under loadMu
	reloadErr    atomic.Pointer[string] // why the last reload failed; nil after a success
	reloads      *prometheus.CounterVec
	log          io.Writer
	maxBody      int64
	maxPixels    int64
	bodyTimeout  time.Duration
	bodies       *byteBudget   // bytes of request bodies held in memory
	slots        chan struct{} // one token per request allowed to classify at once
	waiting      atomic.Int64  // requests waiting for a slot
	queueTimeout time.Duration
	ready        atomic.Bool
	unknowns     prometheus.Counter
	collected    *prometheus.CounterVec
	collectFull  atomic.Bool // the last save found the collection full (logged once)
	statistics   statsTable  // per model version (stats.go)
	grpcOnce     sync.Once   // makes grpcMetrics, at the first NewGRPC
	grpcMetrics  grpcMetrics // the gRPC calls (grpc.go)
}

// latencyBuckets span a sub-millisecond classification of a small image to
// a multi-second upload of a large one.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// New checks cfg, opens and verifies its models and returns the Server
// serving them; ctx bounds the opening (building TensorRT engines can take
// minutes). For a repository, a model that fails to load is logged and
// reported by the repository index; New fails only if none loads. The
// caller owns the Server and must Close it.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:          cfg,
		log:          cfg.Log,
		failures:     map[string]string{},
		maxBody:      cfg.MaxBody,
		maxPixels:    cfg.MaxPixels,
		bodyTimeout:  cfg.BodyTimeout,
		bodies:       &byteBudget{limit: cfg.MaxBuffered},
		slots:        make(chan struct{}, cfg.MaxConcurrent),
		queueTimeout: cfg.QueueTimeout,
	}
	s.models.Store(&catalog{})
	s.newMetrics()
	if cfg.Model != "" {
		s.name = cfg.ModelName
		if _, err := s.load(ctx, s.name, nil); err != nil {
			return nil, err
		}
	} else {
		names, err := repository.Models(cfg.Repository)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if _, err := s.load(ctx, name, nil); err != nil {
				fmt.Fprintf(s.log, "bicyc-infer: %v\n", err)
			}
		}
		if len(*s.models.Load()) == 0 {
			return nil, fmt.Errorf("model repository %s: no model loaded (%d found)", cfg.Repository, len(names))
		}
	}
	s.ready.Store(true)
	s.routes()
	return s, nil
}

// ConfigError is one Config setting out of its range: Field is its name in
// Config, Want the range. The serve command reports it under its flag.
type ConfigError struct {
	Field string
	Value any
	Want  string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("serve: %s %v: want %s", e.Field, e.Value, e.Want)
}

// Problems lists every setting of c out of its range, in field order, with
// the defaults of zero values applied first: the one check of a Config,
// which New runs.
func (c Config) Problems() []*ConfigError {
	var out []*ConfigError
	if (c.Model == "") == (c.Repository == "") {
		out = append(out, &ConfigError{"Model", c.Model, "a model directory or a model repository (Repository " + c.Repository + "), one of the two"})
	}
	if c.ModelName != "" {
		if err := names.Model(c.ModelName); err != nil {
			out = append(out, &ConfigError{"ModelName", c.ModelName, "letters, digits, '-', '_' or '.', not starting with '.'"})
		}
	}
	if err := c.Policy.validate(); err != nil {
		out = append(out, &ConfigError{"Policy", c.Policy, "latest versions >= 1, or pinned versions, not both"})
	}
	if c.TopK < 0 {
		out = append(out, &ConfigError{"TopK", c.TopK, ">= 0 (0: each model's top_k)"})
	}
	if c.MaxBody < 1 {
		out = append(out, &ConfigError{"MaxBody", c.MaxBody, ">= 1 byte"})
	}
	if c.MaxBuffered != 0 && c.MaxBuffered < c.MaxBody {
		out = append(out, &ConfigError{"MaxBuffered", c.MaxBuffered, fmt.Sprintf(">= the largest body, %d bytes (0: 4 times it)", c.MaxBody)})
	}
	if c.MaxConcurrent < 1 {
		out = append(out, &ConfigError{"MaxConcurrent", c.MaxConcurrent, ">= 1"})
	}
	if c.QueueTimeout <= 0 {
		out = append(out, &ConfigError{"QueueTimeout", c.QueueTimeout, "> 0"})
	}
	if c.BodyTimeout < 0 {
		out = append(out, &ConfigError{"BodyTimeout", c.BodyTimeout, ">= 0 (0: none of its own)"})
	}
	if c.MaxPixels < 0 {
		out = append(out, &ConfigError{"MaxPixels", c.MaxPixels, ">= 1 (0: infer.DefaultMaxPixels)"})
	}
	return out
}

// validate checks c (Problems) and fills in the defaults.
func (c *Config) validate() error {
	var errs []error
	for _, p := range c.Problems() {
		errs = append(errs, p)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if c.ModelName == "" {
		c.ModelName = DefaultModelName
	}
	if c.MaxBuffered == 0 {
		c.MaxBuffered = 4 * c.MaxBody
	}
	if c.MaxPixels == 0 {
		c.MaxPixels = infer.DefaultMaxPixels
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.open == nil {
		opts := append(append([]infer.Option(nil), c.Options...), infer.WithMaxPixels(c.MaxPixels), infer.WithTopK(math.MaxInt32))
		c.open = func(ctx context.Context, dir string) (model, error) {
			m, err := infer.Open(ctx, dir, opts...)
			if err != nil {
				return nil, err
			}
			return m, nil
		}
	}
	return nil
}

// newMetrics makes the server's own metrics; routes registers them.
func (s *Server) newMetrics() {
	s.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bicyc_infer_model_reloads_total",
		Help: "Model reloads and loads (POST /admin/reload, SIGHUP, the repository API), by result: ok, or failed (the previous versions kept serving).",
	}, []string{"result"})
	s.unknowns = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "bicyc_infer_unknown_total",
		Help: "Images answered unknown (unlike every known class): a rising share of requests signals drift or new classes.",
	})
	s.collected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bicyc_infer_unknown_collected_total",
		Help: "Unknown images offered to --collect-unknown, by result: saved (a file written), duplicate (already collected), full (a limit reached, counting the folder as it is now) or failed.",
	}, []string{"result"})
}

// routes builds the Public and Admin handlers and registers the metrics.
func (s *Server) routes() {
	reg := s.cfg.Registry
	route := instrumenter(reg, s.reloads, s.unknowns, s.collected, statsCollector{s})
	public := http.NewServeMux()
	route(public, "POST /v1/classify", "classify", s.classify)
	route(public, "GET /healthz", "healthz", func(w http.ResponseWriter, _ *http.Request) { writeText(w, http.StatusOK, "ok") })
	route(public, "GET /readyz", "readyz", s.readyz)
	public.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	s.v2Routes(public, route)
	admin := http.NewServeMux()
	route(admin, "POST /admin/reload", "reload", s.reloadHandler)
	route(admin, "GET /v2", "v2_server_metadata", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.oipServerMeta(true))
	})
	s.repositoryRoutes(admin, route)
	s.Public, s.Admin = jsonErrors(public), jsonErrors(admin)
}

// jsonErrors answers the mux's own 404 (no such endpoint) and 405 (a
// method the endpoint does not take, with its Allow header) as
// {"error": ...}, the answer every other error gets.
func jsonErrors(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern == "" {
			probe := &statusProbe{header: w.Header()}
			h.ServeHTTP(probe, r)
			switch probe.code {
			case http.StatusNotFound:
				writeError(w, probe.code, fmt.Errorf("no endpoint %s", r.URL.Path))
				return
			case http.StatusMethodNotAllowed:
				writeError(w, probe.code, fmt.Errorf("%s takes %s, not %s", r.URL.Path, w.Header().Get("Allow"), r.Method))
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// statusProbe records the status a handler answers, writing nothing.
type statusProbe struct {
	header http.Header
	code   int
}

func (p *statusProbe) Header() http.Header { return p.header }
func (p *statusProbe) WriteHeader(code int) {
	if p.code == 0 {
		p.code = code
	}
}
func (p *statusProbe) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return len(b), nil
}

// instrumenter registers the request metrics (and extra collectors) with
// reg and returns the function that adds a route to a mux, counted and
// timed under the handler label name, with panics turned into 500s.
func instrumenter(reg *prometheus.Registry, extra ...prometheus.Collector) func(mux *http.ServeMux, pattern, name string, h http.HandlerFunc) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bicyc_infer_http_requests_total",
		Help: "HTTP requests answered, by handler, method and status code.",
	}, []string{"handler", "method", "code"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "bicyc_infer_http_request_duration_seconds",
		Help:    "Time from the start of a request to its response, by handler, method and status code.",
		Buckets: latencyBuckets,
	}, []string{"handler", "method", "code"})
	inFlight := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "bicyc_infer_http_requests_in_flight",
		Help: "HTTP requests being served.",
	})
	reg.MustRegister(append(extra, requests, latency, inFlight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))...)
	return func(mux *http.ServeMux, pattern, name string, h http.HandlerFunc) {
		labels := prometheus.Labels{"handler": name}
		mux.Handle(pattern, promhttp.InstrumentHandlerInFlight(inFlight,
			promhttp.InstrumentHandlerDuration(latency.MustCurryWith(labels),
				promhttp.InstrumentHandlerCounter(requests.MustCurryWith(labels), recoverPanics(h)))))
	}
}

// recoverPanics turns a panic in h into a 500 instead of a dropped
// connection. infer returns errors for bad input; this is the last guard.
func recoverPanics(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				writeError(w, http.StatusInternalServerError, fmt.Errorf("internal error: %v", p))
			}
		}()
		h(w, r)
	}
}

// errShuttingDown: the server stopped taking requests; it answers 503.
var errShuttingDown = errors.New("shutting down")

// saturation says why the server cannot take another request now, or "".
func (s *Server) saturation() string {
	if n := s.waiting.Load(); n > 0 {
		return fmt.Sprintf("saturated: all %d classification slots busy, %d requests waiting", cap(s.slots), n)
	}
	if used, limit := s.bodies.load(); limit-used < s.maxBody {
		return fmt.Sprintf("saturated: request bodies hold %d of %d bytes", used, limit)
	}
	return ""
}

// readyz answers 200 while the server accepts requests and has room for
// more, and 503 once it shuts down or while it is saturated: requests are
// waiting for a classification slot, or the memory for request bodies
// cannot take another body of the largest size. After a failed reload it
// still answers 200, since the previous model keeps serving, and says why
// the reload failed.
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		writeText(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	if why := s.saturation(); why != "" {
		writeText(w, http.StatusServiceUnavailable, why)
		return
	}
	if msg := s.reloadErr.Load(); msg != nil {
		writeText(w, http.StatusOK, "ready; the last reload failed: "+*msg)
		return
	}
	writeText(w, http.StatusOK, "ready")
}

// Reload opens and verifies every served model again (checksums, schema
// version, a warm-up run: infer.Open) — for a repository, the versions the
// policy selects now, so a new version directory is picked up — and, per
// model, swaps the new versions in only if all of them verify, closing the
// old ones once their calls in flight have finished. On failure the old
// versions keep serving, /readyz says why, and the error is returned. The
// collection of unknown images is counted again either way.
func (s *Server) Reload() error {
	if c := s.cfg.Collector; c != nil {
		// Files labelled and moved out make room again.
		if err := c.Recount(); err != nil {
			fmt.Fprintf(s.log, "bicyc-infer: %v\n", err)
		}
	}
	var errs []error
	for _, name := range s.models.Load().names() {
		// A reload runs to its end whoever asked for it (an admin request,
		// SIGHUP), so it is not tied to their context.
		if _, err := s.load(context.Background(), name, nil); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		msg := err.Error()
		s.reloadErr.Store(&msg)
		return err
	}
	s.reloadErr.Store(nil)
	return nil
}

// reloadHandler answers POST /admin/reload: 200 with the reloaded models
// (for a single model directory: its directory and classes), or 500 with
// the reason the previous versions are still serving.
func (s *Server) reloadHandler(w http.ResponseWriter, _ *http.Request) {
	if err := s.Reload(); err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	cat := s.models.Load()
	if s.name != "" {
		writeJSON(w, http.StatusOK, map[string]any{"model": s.cfg.Model, "classes": len((*cat)[s.name].latest().classes)})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": cat.index()})
}

// Describe returns one line per model version served: name, version,
// directory, classes, how they are scored, execution provider and when it
// answers unknown.
func (s *Server) Describe() []string {
	var out []string
	cat := s.models.Load()
	for _, name := range cat.names() {
		for _, v := range (*cat)[name].versions {
			out = append(out, fmt.Sprintf("model %s version %d: %s (%d classes%s, %s, %s)",
				name, v.number, v.dir, len(v.classes), shortlistNote(v.model), v.model.Provider(), unknownPolicy(v.model)))
		}
	}
	return out
}

// shortlistNote says how many classes m scores exactly per image when it
// has a shortlist (infer.Classifier.ShortlistSize), else nothing.
func shortlistNote(m model) string {
	if n := m.ShortlistSize(); n > 0 {
		return fmt.Sprintf(", %d scored exactly per image", n)
	}
	return ""
}

// unknownPolicy says when m answers unknown.
func unknownPolicy(m model) string {
	threshold, rate := m.UnknownThreshold()
	switch {
	case math.IsInf(threshold, 1):
		return "never unknown: no calibration"
	case rate > 0:
		return fmt.Sprintf("unknown above score %.3g, accepting %.0f%% of known images", threshold, 100*rate)
	}
	return fmt.Sprintf("unknown above score %.3g", threshold)
}

// Close stops the server's models; requests after it get 503. It does not
// stop listeners: Serve's shutdown does, or the caller's http.Server.
func (s *Server) Close() error {
	s.ready.Store(false)
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	var errs []error
	for _, m := range *s.models.Load() {
		for _, v := range m.versions {
			errs = append(errs, v.model.Close())
		}
	}
	return errors.Join(errs...)
}

// classify answers POST /v1/classify: the image is the raw body, or the
// multipart/form-data field "image". A declared length over MaxBody gets
// 413 before anything is read; the body is read whole before a slot is
// taken (see Server). A repository's models are chosen with the query
// parameters model and version (the only model, its policy's latest
// version, by default).
func (s *Server) classify(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		writeError(w, http.StatusServiceUnavailable, errShuttingDown)
		return
	}
	if r.ContentLength > s.maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("request body declares %d bytes, more than the limit of %d", r.ContentLength, s.maxBody))
		return
	}
	name, version, err := s.v1Model(r)
	if err != nil {
		writeError(w, requestStatus(err), err)
		return
	}
	src, err := imageBody(r, s.limitBody(w, r))
	if err != nil {
		writeError(w, requestStatus(err), err)
		return
	}
	encoded, release, err := s.readBody(src)
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
	var res infer.Result
	var format string
	v, err := s.use(name, version, func(m model) error {
		in, f, err := m.DecodePrepare(r.Context(), bytes.NewReader(encoded))
		if err != nil {
			return &badRequest{err} // 400, or 413/415 by the wrapped error
		}
		format = f
		rs, err := m.ClassifyInputs(r.Context(), []infer.Input{in})
		if err == nil {
			res = rs[0]
		}
		return err
	})
	if err == nil && res.Unknown {
		s.unknowns.Inc()
		s.collect(encoded, format)
	}
	encoded = nil
	if err != nil {
		var bad *badRequest
		status := requestStatus(err)
		if !errors.Is(err, errNotFound) && !errors.As(err, &bad) && status == http.StatusBadRequest {
			status = http.StatusInternalServerError
		}
		writeError(w, status, err)
		return
	}
	res.Predictions = res.Predictions[:min(len(res.Predictions), v.topK)]
	writeJSON(w, http.StatusOK, res)
}

// v1Model returns the model a /v1/classify request asks for: the query
// parameters model and version, or the only model served and its latest
// version (version 0).
func (s *Server) v1Model(r *http.Request) (name string, version int64, err error) {
	if r.URL.RawQuery == "" && s.name != "" {
		return s.name, 0, nil
	}
	q := r.URL.Query()
	name = q.Get("model")
	if name == "" {
		names := s.models.Load().names()
		if len(names) != 1 {
			return "", 0, badRequestf("%d models are served (%v): name one with ?model=", len(names), names)
		}
		name = names[0]
	}
	if v := q.Get("version"); v != "" {
		if version, err = repository.ParseVersion(v); err != nil {
			return "", 0, &badRequest{err}
		}
	}
	return name, version, nil
}

// collect keeps an unknown image, the bytes of the request as they
// arrived, when a Collector is set; a full or failing collection is
// counted and logged, never the request's failure.
func (s *Server) collect(encoded []byte, format string) {
	if s.cfg.Collector == nil {
		return
	}
	_, written, err := s.cfg.Collector.Save(encoded, format)
	switch {
	case err == nil && written:
		s.collected.WithLabelValues("saved").Inc()
		s.collectFull.Store(false)
	case err == nil:
		s.collected.WithLabelValues("duplicate").Inc()
	case errors.Is(err, infer.ErrCollectionFull):
		s.collected.WithLabelValues("full").Inc()
		if !s.collectFull.Swap(true) {
			fmt.Fprintf(s.log, "bicyc-infer: collect unknown images: %v; collection resumes once files are moved out\n", err)
		}
	default:
		s.collected.WithLabelValues("failed").Inc()
		fmt.Fprintf(s.log, "bicyc-infer: collect unknown image: %v\n", err)
	}
}

// writeJSON answers v as JSON with status code, encoded before the status
// line is written: a value that cannot be encoded (a NaN, say) is answered
// 500 with the reason, never with a status and an empty body.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(map[string]string{"error": "encoding the answer: " + err.Error()})
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	w.Write(b)
}

// writeError answers {"error": "..."}: the v1 API's error and the Open
// Inference Protocol's error object alike.
func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, map[string]string{"error": err.Error()})
}

func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	io.WriteString(w, msg+"\n")
}
