package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/bicyc/bicyc/infer"
)

// serveOptions are the serve command's flags.
type serveOptions struct {
	model           *modelOptions
	addr            string
	maxBody         int64
	maxConcurrent   int
	queueTimeout    time.Duration
	readTimeout     time.Duration
	writeTimeout    time.Duration
	shutdownTimeout time.Duration
	collect         collectOptions
}

func newServeCmd(model *modelOptions, stderr io.Writer) *cobra.Command {
	o := &serveOptions{model: model}
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve the model over HTTP",
		Long: `serve runs the model as an HTTP JSON service:

  POST /v1/classify   the image as the raw request body (Content-Type image/*,
                      application/octet-stream or none), or as the multipart form field "image";
                      answers {"predictions": [{"class_id", "name", "task", "distance",
                      "probability"}, ...], "confidence", "unknown_score", "unknown"}, closest
                      first (squared Mahalanobis distance; probability and confidence only for a
                      calibrated model; unknown: like no known class), or {"error": "..."} with
                      400 (unreadable image), 413 (body or image too large), 415 (unknown image
                      format or other content type), 503 (busy or shutting down)
  POST /admin/reload  open and verify the model directory again (schema version, SHA-256 of every
                      file, a warm-up run) and serve it from the next request on, if it verifies:
                      200 {"model", "classes"}, or 500 {"error"} with the previous model serving on
  GET  /healthz       200 while the process runs
  GET  /readyz        200 while it accepts requests (after a failed reload the body says why),
                      503 once shutting down
  GET  /metrics       Prometheus metrics: requests by handler and code, latency, requests in
                      flight, model reloads by result, unknown answers (bicyc_infer_unknown_total,
                      a drift signal) and unknown images collected

  curl -H 'Content-Type: image/png' --data-binary @shirt.png localhost:8080/v1/classify
  curl -F image=@shirt.png localhost:8080/v1/classify

At most --max-concurrent requests classify at once; others wait up to --queue-timeout, then get
503. SIGHUP reloads the model like POST /admin/reload (a line on stderr says how it went); keep
/admin/ off public networks. --collect-unknown DIR saves every image answered unknown (bounded by
--collect-max-files and --collect-max-bytes, never overwriting) to be labelled and added with
add-classes; to serve the result, point --model at a symlink, swap it to the new directory and
reload. SIGINT or SIGTERM stop accepting connections and finish requests in
flight (up to --shutdown-timeout).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runServe(ctx, o, stderr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", ":8080", "listen `address` (env BICYC_ADDR)")
	f.Int64Var(&o.maxBody, "max-body", 32<<20, "largest request body in `bytes` (env BICYC_MAX_BODY)")
	f.IntVar(&o.maxConcurrent, "max-concurrent", runtime.GOMAXPROCS(0), "requests classified at once (env BICYC_MAX_CONCURRENT)")
	f.DurationVar(&o.queueTimeout, "queue-timeout", 2*time.Second, "how long a request waits for a free slot before 503")
	f.DurationVar(&o.readTimeout, "read-timeout", 30*time.Second, "time limit to read a request, body included")
	f.DurationVar(&o.writeTimeout, "write-timeout", 60*time.Second, "time limit from the end of the request headers to the end of the response")
	f.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long shutdown waits for requests in flight")
	o.collect.addFlags(f)
	return cmd
}

func (o *serveOptions) validate() error {
	var errs []error
	if o.maxBody < 1 {
		errs = append(errs, fmt.Errorf("--max-body %d: want >= 1", o.maxBody))
	}
	if o.maxConcurrent < 1 {
		errs = append(errs, fmt.Errorf("--max-concurrent %d: want >= 1", o.maxConcurrent))
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"queue-timeout", o.queueTimeout}, {"read-timeout", o.readTimeout}, {"write-timeout", o.writeTimeout}, {"shutdown-timeout", o.shutdownTimeout}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("--%s %v: want > 0", d.flag, d.v))
		}
	}
	return errors.Join(errs...)
}

// runServe opens the model, listens on o.addr and serves until ctx ends.
func runServe(ctx context.Context, o *serveOptions, stderr io.Writer) error {
	if err := o.validate(); err != nil {
		return err
	}
	collector, err := o.collect.collector()
	if err != nil {
		return err
	}
	c, err := o.model.open(stderr)
	if err != nil {
		return err
	}
	s := newServer(c, o.model.reopener(stderr), o, prometheus.NewRegistry(), stderr)
	s.collector = collector
	defer s.close()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "bicyc-infer: serving %s (%d classes, %s, %s) on %s\n", o.model.model, len(c.Classes()), c.Provider(), unknownPolicy(c), ln.Addr())
	return s.serve(ctx, ln, o, hup)
}

// unknownPolicy says when the model answers unknown, for the start-up line.
func unknownPolicy(c *infer.Classifier) string {
	threshold, rate := c.UnknownThreshold()
	switch {
	case math.IsInf(threshold, 1):
		return "never unknown: no calibration"
	case rate > 0:
		return fmt.Sprintf("unknown above score %.3g, accepting %.0f%% of known images", threshold, 100*rate)
	}
	return fmt.Sprintf("unknown above score %.3g", threshold)
}

// serve answers on ln until ctx ends, reloading the model whenever reload
// delivers (SIGHUP), then marks the server unready, stops accepting
// connections and waits up to o.shutdownTimeout for requests in flight. It
// returns nil after a clean shutdown.
func (s *server) serve(ctx context.Context, ln net.Listener, o *serveOptions, reload <-chan os.Signal) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: min(o.readTimeout, 10*time.Second),
		ReadTimeout:       o.readTimeout,
		WriteTimeout:      o.writeTimeout,
		IdleTimeout:       2 * time.Minute,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
wait:
	for {
		select {
		case err := <-done:
			return err
		case <-reload:
			// reload logs its outcome; a failure leaves the old model serving.
			s.reload()
		case <-ctx.Done():
			break wait
		}
	}
	s.ready.Store(false)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
