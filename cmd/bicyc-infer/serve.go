package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/serve"
)

// serveOptions are the serve command's flags.
type serveOptions struct {
	model           *modelOptions
	repository      string
	modelName       string
	versionPolicy   string
	addr            string
	adminAddr       string
	grpcAddr        string
	grpcAdminAddr   string
	maxBody         int64
	maxBuffered     int64
	maxConcurrent   int
	queueTimeout    time.Duration
	bodyTimeout     time.Duration
	readTimeout     time.Duration
	writeTimeout    time.Duration
	shutdownTimeout time.Duration
	collect         collectOptions
}

func newServeCmd(model *modelOptions, stderr io.Writer) *cobra.Command {
	o := &serveOptions{model: model}
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve the model, or a model repository, over HTTP and gRPC (bicyc's API and KServe v2)",
		Long:  serveHelp,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return runServe(ctx, o, stderr)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

// serveHelp is serve's long help: its endpoints, limits and memory.
const serveHelp = `serve runs the model (--model DIR), or every model of a repository (--model-repository DIR,
laid out DIR/<name>/<version>/), as an HTTP JSON and gRPC service. The public listener (--addr, by default
127.0.0.1:8080: this machine only; give --addr :8080 to serve other machines) answers:

  POST /v1/classify   the image as the raw request body (Content-Type image/*,
                      application/octet-stream or none), or as the multipart form field "image";
                      answers {"predictions": [{"class_id", "name", "task", "distance",
                      "probability"}, ...], "confidence", "unknown_score", "unknown_score_name",
                      "unknown"}, closest
                      first (squared Mahalanobis distance; probability and confidence only for a
                      calibrated model; unknown: like no known class), or {"error": "..."} with
                      400 (unreadable image), 408 (body not received within --body-timeout),
                      413 (body or image too large; a declared Content-Length over --max-body at
                      once), 415 (unknown image format or other content type), 503 (busy or
                      shutting down)
  GET  /healthz       200 while the process runs
  GET  /readyz        200 while it accepts requests (after a failed reload the body says why);
                      503 while saturated (requests waiting for a slot, or the memory for bodies
                      full) and once shutting down
  GET  /metrics       Prometheus metrics: requests by handler and code, latency, requests in
                      flight, model reloads by result, unknown answers (bicyc_infer_unknown_total,
                      a drift signal) and unknown images collected
  /v2/...             the Open Inference Protocol (KServe v2) over REST: GET /v2/health/live,
                      /v2/health/ready, /v2/models/<name>[/versions/<v>] (metadata; the classes
                      in parameters), .../ready and .../stats; POST .../infer with a BYTES tensor
                      "image" of encoded images (base64 in JSON) or an FP32 tensor "input"
                      [N,C,H,W]; outputs "distance", "probabilities", "unknown_score", "unknown";
                      Triton's binary tensor data, classification and statistics extensions.
                      A --model is served as --model-name, version 1. With a repository,
                      /v1/classify takes ?model=<name>&version=<v>.

The admin listener (--admin-addr, by default 127.0.0.1:8081; empty turns it off) answers only:

  POST /admin/reload  open and verify the model directory again (schema version, SHA-256 of the
                      manifest and every file, a warm-up run) and serve it from the next request
                      on, if it verifies: 200 {"model", "classes"}, or 500 {"error"} with the
                      previous model serving on (a repository: every loaded model again)
  GET  /v2            server metadata, with the model_repository extension for a repository
  POST /v2/repository/index, /v2/repository/models/<name>/load and .../unload
                      Triton's repository API: every version and why it is or is not served;
                      load a model's versions (body {"parameters": {"version_policy":
                      "specific:1"}} pins or rolls back), swapped in only if all verify; unload

  curl -H 'Content-Type: image/png' --data-binary @shirt.png localhost:8080/v1/classify
  curl -F image=@shirt.png localhost:8080/v1/classify
  curl -X POST localhost:8081/admin/reload

The gRPC listener (--grpc-addr, by default 127.0.0.1:8001, Triton's gRPC port; empty turns it off)
serves the Open Inference Protocol over gRPC (service inference.GRPCInferenceService: ServerLive,
ServerReady, ModelReady, ServerMetadata, ModelMetadata, ModelInfer with typed or raw contents,
ModelStatistics), the standard health service grpc.health.v1 (SERVING while /v2/health/ready
answers 200; service "live" while the process answers) and server reflection, with the same models,
limits (a message over --max-body is refused), timeouts (--write-timeout bounds each call) and
metrics. The admin gRPC listener (--grpc-admin-addr, by default 127.0.0.1:8002; empty turns it off)
adds Triton's repository RPCs (RepositoryIndex, RepositoryModelLoad, RepositoryModelUnload).

  grpcurl -plaintext -d '{"name": "bicyc"}' localhost:8001 inference.GRPCInferenceService/ModelMetadata

A request's body is read whole first (at most --max-body bytes, within --body-timeout; all bodies
in memory together at most --max-buffered bytes, else 503), and only then does it wait, up to
--queue-timeout, for one of --max-concurrent classification slots (else 503): slow or stalled
uploads never hold a slot. Images are decoded inside a slot, so at most --max-concurrent images are
decoded at once, each up to about 16 bytes per pixel (256 MiB at the default 16 Mpx); a JPEG of
more than 100 scans is refused (413), and a client that leaves stops its decoding. A v2 batch is
classified in runs of at most 64 images; one whose answers would take more than 4 x --max-body
gets 413 naming the limit. Memory ceiling: about 128 MiB + --max-buffered + --max-concurrent x
(16 B x --max-pixels + 7 x --max-body) (per slot: an image being decoded, the tensors decoded from
one body and that request's answers; with the defaults and two cores, 128 + 128 + 2 x (256 + 224)
= 1216 MiB; it is set as the Go runtime's soft memory limit unless GOMEMLIMIT is set), plus a
repository's models, about the size of their files each.
--collect-unknown DIR saves every image answered unknown, from the body already read (bounded by
--collect-max-files and --collect-max-bytes over what DIR holds now: moving labelled files out
makes room at once, files other processes write count; never overwriting), to be labelled and
added with add-classes; to serve the result, point --model at a symlink, swap it to the new directory and
reload. SIGHUP reloads the model like POST /admin/reload (a line on stderr says how it went).
SIGINT or SIGTERM stop accepting connections and finish requests in flight (up to
--shutdown-timeout).`

// addFlags defines serve's own flags (the model's are on the root
// command) on f.
func (o *serveOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.repository, "model-repository", "", "serve every model of this repository `dir`ectory, DIR/<name>/<version>/ (instead of --model; env BICYC_MODEL_REPOSITORY)")
	f.StringVar(&o.modelName, "model-name", serve.DefaultModelName, "the --model's `name` on the /v2/models/ paths")
	f.StringVar(&o.versionPolicy, "version-policy", "latest:1", "versions of each repository model to serve: latest, latest:N or specific:V1,V2,...")
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "public listen `address`; :8080 listens on every interface (env BICYC_ADDR)")
	f.StringVar(&o.adminAddr, "admin-addr", "127.0.0.1:8081", "listen `address` of POST /admin/reload and the repository API; empty: none (env BICYC_ADMIN_ADDR)")
	f.StringVar(&o.grpcAddr, "grpc-addr", "127.0.0.1:8001", "listen `address` of the Open Inference Protocol over gRPC; empty: none (env BICYC_GRPC_ADDR)")
	f.StringVar(&o.grpcAdminAddr, "grpc-admin-addr", "127.0.0.1:8002", "listen `address` of the gRPC API with the repository RPCs; empty: none (env BICYC_GRPC_ADMIN_ADDR)")
	f.Int64Var(&o.maxBody, "max-body", 32<<20, "largest request body in `bytes` (env BICYC_MAX_BODY)")
	f.Int64Var(&o.maxBuffered, "max-buffered", 128<<20, "`bytes` of request bodies held in memory at once, over all requests (env BICYC_MAX_BUFFERED)")
	f.IntVar(&o.maxConcurrent, "max-concurrent", runtime.GOMAXPROCS(0), "requests classified at once (env BICYC_MAX_CONCURRENT)")
	f.DurationVar(&o.queueTimeout, "queue-timeout", 2*time.Second, "how long a request whose body is in waits for a free slot before 503")
	f.DurationVar(&o.bodyTimeout, "body-timeout", 10*time.Second, "time limit to receive a request's body once its headers are in (408 after it)")
	f.DurationVar(&o.readTimeout, "read-timeout", 30*time.Second, "time limit to read a request, body included")
	f.DurationVar(&o.writeTimeout, "write-timeout", 60*time.Second, "time limit from the end of the request headers to the end of the response")
	f.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long shutdown waits for requests in flight")
	o.collect.addFlags(f)
}

// serveFlags names the flag behind each serve.Config field, for
// serve.Config.Problems, the one check of the settings the server owns.
var serveFlags = map[string]string{
	"Model": "--model", "ModelName": "--model-name", "Policy": "--version-policy", "TopK": "--top-k",
	"MaxBody": "--max-body", "MaxBuffered": "--max-buffered", "MaxConcurrent": "--max-concurrent",
	"QueueTimeout": "--queue-timeout", "BodyTimeout": "--body-timeout", "MaxPixels": "--max-pixels",
}

// config turns the flags into the server's configuration; its models are
// opened with the model flags' options, logging to log. Every bad flag is
// reported at once, before any model is opened.
func (o *serveOptions) config(log io.Writer) (serve.Config, error) {
	var errs []error
	if o.model.model != "" && o.repository != "" || o.model.model == "" && o.repository == "" {
		errs = append(errs, errors.New("serve needs --model DIR or --model-repository DIR, one of the two (or BICYC_MODEL / BICYC_MODEL_REPOSITORY)"))
	}
	errs = append(errs, distinctAddrs([][2]string{{"addr", o.addr}, {"admin-addr", o.adminAddr}, {"grpc-addr", o.grpcAddr}, {"grpc-admin-addr", o.grpcAdminAddr}})...)
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"read-timeout", o.readTimeout}, {"write-timeout", o.writeTimeout}, {"shutdown-timeout", o.shutdownTimeout}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("--%s %v: want > 0", d.flag, d.v))
		}
	}
	policy, err := serve.ParseVersionPolicy(o.versionPolicy)
	if err != nil {
		errs = append(errs, fmt.Errorf("--version-policy: %w", err))
	}
	opts, err := o.model.openOptions(log)
	if err != nil {
		errs = append(errs, err)
	}
	cfg := serve.Config{
		Model: o.model.model, ModelName: o.modelName, Repository: o.repository, Policy: policy,
		Options: opts, TopK: o.model.topK, MaxBody: o.maxBody, MaxBuffered: o.maxBuffered,
		MaxConcurrent: o.maxConcurrent, QueueTimeout: o.queueTimeout, BodyTimeout: o.bodyTimeout,
		MaxPixels: o.model.maxPixels, Log: log,
	}
	if o.bodyTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--body-timeout %v: want > 0", o.bodyTimeout))
	}
	for _, p := range cfg.Problems() {
		if p.Field == "Model" || p.Field == "BodyTimeout" {
			continue // said above, in the command's words
		}
		errs = append(errs, fmt.Errorf("%s %v: want %s", serveFlags[p.Field], p.Value, p.Want))
	}
	if err := errors.Join(errs...); err != nil {
		return serve.Config{}, err
	}
	if cfg.Collector, err = o.collect.collector(); err != nil {
		return serve.Config{}, err
	}
	return cfg, nil
}

// distinctAddrs reports every listen address (flag, value) that repeats
// an earlier one; empty ones (a listener turned off) and port 0 (any free
// port) never clash.
func distinctAddrs(addrs [][2]string) []error {
	var errs []error
	seen := map[string]string{}
	for _, a := range addrs {
		if _, port, _ := net.SplitHostPort(a[1]); a[1] == "" || port == "0" {
			continue
		}
		if first, ok := seen[a[1]]; ok {
			errs = append(errs, fmt.Errorf("--%s %s: want an address other than --%s", a[0], a[1], first))
			continue
		}
		seen[a[1]] = a[0]
	}
	return errs
}

// runServe opens the models, listens on o.addr (and o.adminAddr) and
// serves until ctx ends, reloading the models on SIGHUP.
func runServe(ctx context.Context, o *serveOptions, stderr io.Writer) error {
	cfg, err := o.config(stderr)
	if err != nil {
		return err
	}
	if o.model.model != "" {
		warnBehind(stderr, o.model.model)
	}
	s, err := serve.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	infer.LimitMemory(cfg.MemoryCeiling())
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reload := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				select {
				case reload <- struct{}{}:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	l := serve.Listeners{Public: ln}
	defer func() {
		// Serve closed them; after a failed Listen, these are the ones open.
		for _, ln := range []net.Listener{l.Public, l.Admin, l.GRPC, l.AdminGRPC} {
			if ln != nil {
				ln.Close()
			}
		}
	}()
	for _, opt := range []struct {
		addr, what string
		ln         *net.Listener
	}{{o.adminAddr, "admin listener", &l.Admin}, {o.grpcAddr, "gRPC listener", &l.GRPC}, {o.grpcAdminAddr, "admin gRPC listener", &l.AdminGRPC}} {
		if opt.addr != "" {
			if *opt.ln, err = net.Listen("tcp", opt.addr); err != nil {
				return fmt.Errorf("%s: %w", opt.what, err)
			}
		}
	}
	for _, line := range s.Describe() {
		fmt.Fprintf(stderr, "bicyc-infer: %s\n", line)
	}
	fmt.Fprintf(stderr, "bicyc-infer: serving /v1/classify and /v2/models/ on %s\n", ln.Addr())
	if l.Admin != nil {
		fmt.Fprintf(stderr, "bicyc-infer: /v2/repository/ and POST /admin/reload on %s\n", l.Admin.Addr())
	}
	if l.GRPC != nil {
		fmt.Fprintf(stderr, "bicyc-infer: gRPC inference.GRPCInferenceService on %s\n", l.GRPC.Addr())
	}
	if l.AdminGRPC != nil {
		fmt.Fprintf(stderr, "bicyc-infer: gRPC with the repository RPCs on %s\n", l.AdminGRPC.Addr())
	}
	return s.Serve(ctx, l, serve.Timeouts{Read: o.readTimeout, Write: o.writeTimeout, Shutdown: o.shutdownTimeout}, reload)
}
