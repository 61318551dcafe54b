package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/infer"
)

// model is what the server needs of *infer.Classifier.
type model interface {
	Classify(ctx context.Context, img image.Image) (infer.Result, error)
	Classes() []bundle.Class
	Close() error
}

// loadedModel is one opened, verified model and when it was opened.
type loadedModel struct {
	model    model
	loadedAt time.Time
}

// server is the HTTP API of `bicyc-infer serve`: handler is the public
// API, admin the administrative one (POST /admin/reload), served on its own
// listener. Both are safe for concurrent use. The server owns the model it
// serves: reload swaps in a new one and closes the old one; close releases
// the current one.
//
// A classification request goes through three bounded stages: its body is
// read into memory (at most maxBody bytes, within bodyTimeout, counted
// against bodies, the memory all bodies in flight may hold), then it waits
// up to queueTimeout for one of the slots, and only then is its image
// decoded and classified. A slow or stalled upload therefore holds a bounded
// part of the body memory for at most bodyTimeout, never a slot. An image
// answered unknown is counted and, with a collector, saved from the body
// already in memory.
type server struct {
	current      atomic.Pointer[loadedModel]
	dir          string                // the model directory, for messages
	reopen       func() (model, error) // opens and verifies dir again
	log          io.Writer
	reloadMu     sync.Mutex             // one reload at a time
	reloadErr    atomic.Pointer[string] // why the last reload failed; nil after a success
	reloads      *prometheus.CounterVec
	maxBody      int64
	maxPixels    int64
	bodyTimeout  time.Duration // 0: only the server's read timeout applies
	bodies       *byteBudget   // bytes of request bodies held in memory
	slots        chan struct{} // one token per request allowed to classify at once
	waiting      atomic.Int64  // requests waiting for a slot
	queueTimeout time.Duration
	ready        atomic.Bool
	handler      http.Handler // the public API
	admin        http.Handler // POST /admin/reload
	unknowns     prometheus.Counter
	collected    *prometheus.CounterVec
	collector    *infer.Collector // nil: unknown images are not kept
	collectFull  atomic.Bool      // the last save found the collection full (logged once)
}

// latencyBuckets span a sub-millisecond classification of a small image to
// a multi-second upload of a large one.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// newServer builds the server around m, the opened model of o.model.model,
// which the server owns from then on, and registers its metrics, plus the
// Go runtime and process collectors, with reg. reopen opens and verifies
// the model directory again for reload; log receives one line per reload.
// A zero o.maxBuffered means 4 x o.maxBody; a zero o.bodyTimeout sets no
// deadline of its own on reading bodies.
func newServer(m model, reopen func() (model, error), o *serveOptions, reg *prometheus.Registry, log io.Writer) *server {
	buffered := o.maxBuffered
	if buffered == 0 {
		buffered = 4 * o.maxBody
	}
	s := &server{
		dir:          o.model.model,
		reopen:       reopen,
		log:          log,
		maxBody:      o.maxBody,
		maxPixels:    o.model.maxPixels,
		bodyTimeout:  o.bodyTimeout,
		bodies:       &byteBudget{limit: buffered},
		slots:        make(chan struct{}, o.maxConcurrent),
		queueTimeout: o.queueTimeout,
	}
	s.current.Store(&loadedModel{model: m, loadedAt: time.Now()})
	s.ready.Store(true)
	s.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bicyc_infer_model_reloads_total",
		Help: "Model reloads (POST /admin/reload or SIGHUP), by result: ok, or failed (the previous model kept serving).",
	}, []string{"result"})
	s.unknowns = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "bicyc_infer_unknown_total",
		Help: "Images answered unknown (unlike every known class): a rising share of requests signals drift or new classes.",
	})
	s.collected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bicyc_infer_unknown_collected_total",
		Help: "Unknown images offered to --collect-unknown, by result: saved (a file written), duplicate (already collected), full (a limit reached, counting the folder as it is now) or failed.",
	}, []string{"result"})
	route := instrumenter(reg, s.reloads, s.unknowns, s.collected)
	public := http.NewServeMux()
	route(public, "POST /v1/classify", "classify", s.classify)
	route(public, "GET /healthz", "healthz", func(w http.ResponseWriter, _ *http.Request) { writeText(w, http.StatusOK, "ok") })
	route(public, "GET /readyz", "readyz", s.readyz)
	public.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	admin := http.NewServeMux()
	route(admin, "POST /admin/reload", "reload", s.reloadHandler)
	s.handler, s.admin = public, admin
	return s
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

// readyz answers 200 while the server accepts requests and has room for
// more, and 503 once it shuts down or while it is saturated: requests are
// waiting for a classification slot, or the memory for request bodies
// cannot take another body of the largest size. After a failed reload it
// still answers 200, since the previous model keeps serving, and says why
// the reload failed.
func (s *server) readyz(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		writeText(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	if n := s.waiting.Load(); n > 0 {
		writeText(w, http.StatusServiceUnavailable, fmt.Sprintf("saturated: all %d classification slots busy, %d requests waiting", cap(s.slots), n))
		return
	}
	if used, limit := s.bodies.load(); limit-used < s.maxBody {
		writeText(w, http.StatusServiceUnavailable, fmt.Sprintf("saturated: request bodies hold %d of %d bytes", used, limit))
		return
	}
	if msg := s.reloadErr.Load(); msg != nil {
		writeText(w, http.StatusOK, "ready; the last reload failed: "+*msg)
		return
	}
	writeText(w, http.StatusOK, "ready")
}

// reload opens and verifies the model directory again (checksums, schema
// version, a warm-up run: infer.Open) and, only if that succeeds, swaps the
// new model in for the requests that follow and closes the old one once
// its calls in flight have finished. On failure the old model keeps
// serving, /readyz says why, and the error is returned. The collection of
// unknown images is counted again either way. Reloads are serialised.
func (s *server) reload() error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	if s.collector != nil {
		// Files labelled and moved out make room again.
		if err := s.collector.Recount(); err != nil {
			fmt.Fprintf(s.log, "bicyc-infer: %v\n", err)
		}
	}
	m, err := s.reopen()
	if err != nil {
		err = fmt.Errorf("reload of %s failed, still serving the model verified at %s: %w",
			s.dir, s.current.Load().loadedAt.Format(time.RFC3339), err)
		msg := err.Error()
		s.reloadErr.Store(&msg)
		s.reloads.WithLabelValues("failed").Inc()
		fmt.Fprintf(s.log, "bicyc-infer: %v\n", err)
		return err
	}
	old := s.current.Swap(&loadedModel{model: m, loadedAt: time.Now()})
	s.reloadErr.Store(nil)
	s.reloads.WithLabelValues("ok").Inc()
	fmt.Fprintf(s.log, "bicyc-infer: reloaded %s (%d classes)\n", s.dir, len(m.Classes()))
	return old.model.Close()
}

// reloadHandler answers POST /admin/reload: 200 with the reloaded model's
// directory and classes, or 500 with the reason the previous model is
// still serving.
func (s *server) reloadHandler(w http.ResponseWriter, _ *http.Request) {
	if err := s.reload(); err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"model": s.dir, "classes": len(s.current.Load().model.Classes())})
}

// close releases the current model; requests after it get 503.
func (s *server) close() error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	return s.current.Load().model.Close()
}

// classifyImage classifies img with the current model. A reload may close
// the model a request picked just before the swap: the request then runs
// again on the model that replaced it.
func (s *server) classifyImage(ctx context.Context, img image.Image) (infer.Result, error) {
	for {
		cur := s.current.Load()
		res, err := cur.model.Classify(ctx, img)
		if errors.Is(err, infer.ErrClosed) && s.current.Load() != cur {
			continue
		}
		return res, err
	}
}

// classify answers POST /v1/classify: the image is the raw body, or the
// multipart/form-data field "image". A declared length over maxBody gets
// 413 before anything is read; the body is read whole before a slot is
// taken (see server).
func (s *server) classify(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		writeError(w, http.StatusServiceUnavailable, errors.New("shutting down"))
		return
	}
	if r.ContentLength > s.maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("request body declares %d bytes, more than the limit of %d", r.ContentLength, s.maxBody))
		return
	}
	encoded, release, err := s.readImage(w, r)
	defer release()
	if err != nil {
		writeError(w, requestStatus(err), err)
		return
	}
	if err := s.acquire(r.Context()); err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	defer func() { <-s.slots }()
	img, format, err := data.DecodeImage(bytes.NewReader(encoded), s.maxPixels)
	if err != nil {
		writeError(w, requestStatus(err), err)
		return
	}
	res, err := s.classifyImage(r.Context(), img)
	bounds := img.Bounds()
	img = nil // no longer referenced, whatever follows
	if err == nil && res.Unknown {
		s.unknowns.Inc()
		s.collect(encoded, format)
	}
	encoded = nil
	releaseImage(bounds)
	switch {
	case errors.Is(err, infer.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, err)
	case errors.Is(err, context.Canceled):
		// The client went away and its context stopped the run: nginx's
		// "client closed request", not a server error.
		writeError(w, statusClientClosed, err)
	case err != nil:
		writeError(w, http.StatusInternalServerError, err)
	default:
		writeJSON(w, http.StatusOK, res)
	}
}

// collect keeps an unknown image, the bytes of the request as they
// arrived, when --collect-unknown is set; a full or failing collection is
// counted and logged, never the request's failure.
func (s *server) collect(encoded []byte, format string) {
	if s.collector == nil {
		return
	}
	_, written, err := s.collector.Save(encoded, format)
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

// errBodiesFull: the memory for request bodies is taken by other requests;
// the server answers 503.
var errBodiesFull = errors.New("busy: the memory for request bodies is full; retry later")

// errBodyTimeout: the body did not arrive within the body timeout; the
// server answers 408.
var errBodyTimeout = errors.New("request body not received in time")

// readImage reads the request's image (the body, or its multipart field)
// into memory within s.bodyTimeout, at most s.maxBody bytes of body,
// counting the buffer against s.bodies as it grows. The caller must call
// release, also after an error, once it no longer needs the bytes.
func (s *server) readImage(w http.ResponseWriter, r *http.Request) (encoded []byte, release func(), err error) {
	var held int64
	release = func() { s.bodies.give(held) }
	if s.bodyTimeout > 0 {
		// Unsupported only by test recorders, which have no connection.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.bodyTimeout))
	}
	src, err := imageBody(r, http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		return nil, release, err
	}
	chunk := make([]byte, 32<<10)
	for {
		n, err := src.Read(chunk)
		if len(encoded)+n > cap(encoded) {
			grown := int64(max(2*cap(encoded), len(encoded)+n, 64<<10))
			grown = min(grown, s.maxBody+int64(len(chunk)))
			if !s.bodies.take(grown - int64(cap(encoded))) {
				return nil, release, errBodiesFull
			}
			held += grown - int64(cap(encoded))
			encoded = append(make([]byte, 0, grown), encoded...)
		}
		encoded = append(encoded, chunk[:n]...)
		switch {
		case errors.Is(err, io.EOF):
			return encoded, release, nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, release, fmt.Errorf("%w: %d bytes within %v", errBodyTimeout, len(encoded), s.bodyTimeout)
		case err != nil:
			return nil, release, err
		}
	}
}

// acquire waits for a classification slot, at most queueTimeout.
func (s *server) acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
		return nil
	default:
	}
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	t := time.NewTimer(s.queueTimeout)
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-t.C:
		return fmt.Errorf("busy: %d requests are being classified; retry later", cap(s.slots))
	case <-ctx.Done():
		return ctx.Err()
	}
}

// byteBudget counts bytes held against a limit. It is safe for concurrent
// use.
type byteBudget struct {
	mu          sync.Mutex
	used, limit int64
}

// take reserves n bytes if they fit under the limit.
func (b *byteBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

// give returns n bytes taken before.
func (b *byteBudget) give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
}

// load returns the bytes held and the limit.
func (b *byteBudget) load() (used, limit int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.limit
}

// errContentType: the request declares a content type that is not an
// image; the server answers 415.
var errContentType = errors.New("unsupported content type")

// imageBody returns the reader of the image in r: its multipart field
// "image", or the whole body when the request declares no content type,
// an image/* type or application/octet-stream. Any other type is an error
// wrapping errContentType.
func imageBody(r *http.Request, body io.Reader) (io.Reader, error) {
	contentType := r.Header.Get("Content-Type")
	if contentType == "" {
		return body, nil
	}
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, fmt.Errorf("content type %q: %w: %v", contentType, errContentType, err)
	}
	switch {
	case strings.HasPrefix(mediaType, "image/"), mediaType == "application/octet-stream":
		return body, nil
	case mediaType != "multipart/form-data":
		return nil, fmt.Errorf(`content type %s: %w: send the image as the body, typed image/* or application/octet-stream, or as the multipart/form-data field "image"`,
			mediaType, errContentType)
	}
	boundary := params["boundary"]
	if boundary == "" {
		return nil, errors.New("multipart/form-data without a boundary")
	}
	mr := multipart.NewReader(body, boundary)
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, errors.New(`no multipart field named "image"`)
		}
		if err != nil {
			return nil, fmt.Errorf("multipart body: %w", err)
		}
		if part.FormName() == "image" {
			return part, nil
		}
	}
}

// requestStatus maps an error in reading or decoding the request's image
// to the HTTP status that tells the client what to do about it: the
// request's fault (4xx), or a full server (503).
// statusClientClosed is nginx's 499, "client closed request": the status
// of a request whose client went away before its answer.
const statusClientClosed = 499

func requestStatus(err error) int {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig), errors.Is(err, infer.ErrImageTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errBodyTimeout):
		return http.StatusRequestTimeout
	case errors.Is(err, errBodiesFull):
		return http.StatusServiceUnavailable
	case errors.Is(err, image.ErrFormat), errors.Is(err, errContentType):
		return http.StatusUnsupportedMediaType
	}
	return http.StatusBadRequest
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, map[string]string{"error": err.Error()})
}

func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	io.WriteString(w, msg+"\n")
}
