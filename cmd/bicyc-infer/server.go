package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bicyc/bicyc/infer"
)

// classifier is what the server needs of *infer.Classifier.
type classifier interface {
	Classify(img image.Image) (infer.Result, error)
}

// server is the HTTP API of `bicyc-infer serve`. Its handler is safe for
// concurrent use.
type server struct {
	classifier   classifier
	maxBody      int64
	maxPixels    int64
	slots        chan struct{} // one token per request allowed to classify at once
	queueTimeout time.Duration
	ready        atomic.Bool
	handler      http.Handler
}

// latencyBuckets span a sub-millisecond classification of a small image to
// a multi-second upload of a large one.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// newServer builds the server and registers its metrics, plus the Go
// runtime and process collectors, with reg.
func newServer(c classifier, o *serveOptions, reg *prometheus.Registry) *server {
	s := &server{
		classifier:   c,
		maxBody:      o.maxBody,
		maxPixels:    o.model.maxPixels,
		slots:        make(chan struct{}, o.maxConcurrent),
		queueTimeout: o.queueTimeout,
	}
	s.ready.Store(true)

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
	reg.MustRegister(requests, latency, inFlight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	mux := http.NewServeMux()
	route := func(pattern, name string, h http.HandlerFunc) {
		labels := prometheus.Labels{"handler": name}
		mux.Handle(pattern, promhttp.InstrumentHandlerInFlight(inFlight,
			promhttp.InstrumentHandlerDuration(latency.MustCurryWith(labels),
				promhttp.InstrumentHandlerCounter(requests.MustCurryWith(labels), recoverPanics(h)))))
	}
	route("POST /v1/classify", "classify", s.classify)
	route("GET /healthz", "healthz", func(w http.ResponseWriter, _ *http.Request) { writeText(w, http.StatusOK, "ok") })
	route("GET /readyz", "readyz", s.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	s.handler = mux
	return s
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

func (s *server) readyz(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		writeText(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	writeText(w, http.StatusOK, "ready")
}

// classify answers POST /v1/classify: the image is the raw body, or the
// multipart/form-data field "image".
func (s *server) classify(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() {
		writeError(w, http.StatusServiceUnavailable, errors.New("shutting down"))
		return
	}
	if err := s.acquire(r.Context()); err != nil {
		writeError(w, http.StatusServiceUnavailable, err)
		return
	}
	defer func() { <-s.slots }()

	body := http.MaxBytesReader(w, r.Body, s.maxBody)
	src, err := imageBody(r, body)
	if err != nil {
		writeError(w, requestStatus(err), err)
		return
	}
	img, _, err := infer.DecodeImage(src, s.maxPixels)
	if err != nil {
		writeError(w, requestStatus(err), err)
		return
	}
	res, err := s.classifier.Classify(img)
	switch {
	case errors.Is(err, infer.ErrClosed):
		writeError(w, http.StatusServiceUnavailable, err)
	case err != nil:
		writeError(w, http.StatusInternalServerError, err)
	default:
		writeJSON(w, http.StatusOK, res)
	}
}

// acquire waits for a classification slot, at most queueTimeout.
func (s *server) acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
		return nil
	default:
	}
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

// imageBody returns the reader of the image in r: its multipart field
// "image", or the whole body.
func imageBody(r *http.Request, body io.Reader) (io.Reader, error) {
	mediaType, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/form-data" {
		return body, nil
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
// to the HTTP status that tells the client what to do about it; all of them
// are the request's fault.
func requestStatus(err error) int {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig), errors.Is(err, infer.ErrImageTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, image.ErrFormat):
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
