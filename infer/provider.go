package infer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	ort "github.com/yalue/onnxruntime_go"
)

// Provider names an ONNX Runtime execution provider.
type Provider string

// The execution providers infer can ask ONNX Runtime for.
const (
	// ProviderAuto tries ProviderTensorRT, then ProviderCUDA, then
	// ProviderCPU, and reports in one log line which runs and why the others
	// do not.
	ProviderAuto Provider = "auto"
	// ProviderTensorRT runs on an NVIDIA GPU through TensorRT, with CUDA for
	// the nodes TensorRT does not take. It needs a GPU build of ONNX Runtime.
	ProviderTensorRT Provider = "tensorrt"
	// ProviderCUDA runs on an NVIDIA GPU through CUDA. It needs a GPU build
	// of ONNX Runtime.
	ProviderCUDA Provider = "cuda"
	// ProviderCPU runs on the CPU; every ONNX Runtime build has it.
	ProviderCPU Provider = "cpu"
)

// autoOrder is the order in which ProviderAuto tries providers: fastest first.
var autoOrder = []Provider{ProviderTensorRT, ProviderCUDA, ProviderCPU}

// ErrProviderUnavailable means the requested execution provider cannot run
// here: the ONNX Runtime build lacks it, or its libraries or device are
// missing. Callers may retry with ProviderCPU.
var ErrProviderUnavailable = errors.New("execution provider unavailable")

// ParseProvider returns the Provider named s ("auto", "tensorrt", "cuda" or
// "cpu", any case).
func ParseProvider(s string) (Provider, error) {
	p := Provider(strings.ToLower(strings.TrimSpace(s)))
	switch p {
	case ProviderAuto, ProviderTensorRT, ProviderCUDA, ProviderCPU:
		return p, nil
	}
	return "", fmt.Errorf("unknown execution provider %q (want auto, tensorrt, cuda or cpu)", s)
}

// startSessionsCtx is startSessions, returning when ctx is done: ONNX
// Runtime cannot stop creating a session (TensorRT may spend minutes
// building engines), so the creation goes on in the background and
// releases what it made. On success it writes the start-up line to
// cfg.log.
func startSessionsCtx(ctx context.Context, cfg *config, specs []modelSpec) ([]*session, Provider, error) {
	type started struct {
		sessions []*session
		provider Provider
		line     string
		err      error
	}
	done := make(chan started, 1)
	go func() {
		creatingSessions()
		var s started
		s.sessions, s.provider, s.line, s.err = startSessions(ctx, cfg, specs)
		done <- s
	}()
	select {
	case s := <-done:
		if s.err == nil && s.line != "" {
			fmt.Fprintln(cfg.log, s.line)
		}
		return s.sessions, s.provider, s.err
	case <-ctx.Done():
		go func() {
			abandoned := (<-done).sessions
			destroyAll(abandoned)
			sessionsAbandoned(len(abandoned))
		}()
		return nil, "", ctx.Err()
	}
}

// creatingSessions runs before Open's sessions are created, and
// sessionsAbandoned after a cancelled Open released the n sessions created
// for it; tests replace them to cancel mid-creation and see the release.
var (
	creatingSessions  = func() {}
	sessionsAbandoned = func(n int) {}
)

// startSessions loads every spec with the provider cfg asks for and returns
// the sessions in spec order and the provider that runs them. Unless the CPU
// was asked for by name, it returns a start-up line naming the ONNX Runtime
// version and the provider that runs the model; under ProviderAuto the line
// also says why each faster provider was refused. It tries no further
// provider once ctx is done.
func startSessions(ctx context.Context, cfg *config, specs []modelSpec) ([]*session, Provider, string, error) {
	if cfg.provider != ProviderAuto {
		sessions, err := loadWith(cfg.provider, cfg, specs)
		if err == nil {
			line := ""
			if cfg.provider != ProviderCPU {
				line = startLine(cfg.provider, nil)
			}
			return sessions, cfg.provider, line, nil
		}
		if cfg.provider == ProviderCPU || errors.Is(err, ErrProviderUnavailable) {
			return nil, "", "", err
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, "", "", ctxErr
		}
		// A GPU provider that registered but cannot create a session (no
		// device, driver mismatch, a node it cannot run) looks like a broken
		// model unless the CPU can load the same model: only then blame the
		// provider.
		cpu, cpuErr := loadWith(ProviderCPU, cfg, specs[:1])
		destroyAll(cpu)
		if cpuErr != nil {
			return nil, "", "", cpuErr
		}
		return nil, "", "", unavailable(cfg.provider, err)
	}

	var refused []string
	for _, p := range autoOrder {
		if err := ctx.Err(); err != nil {
			return nil, "", "", err
		}
		sessions, err := loadWith(p, cfg, specs)
		if err == nil {
			return sessions, p, startLine(p, refused), nil
		}
		if p == ProviderCPU {
			return nil, "", "", err
		}
		refused = append(refused, string(p)+": "+providerFailure(err))
	}
	panic("infer: autoOrder does not end with ProviderCPU")
}

// startLine is the start-up line: the ONNX Runtime version, the provider
// that runs the model and why each faster one was refused.
func startLine(p Provider, refused []string) string {
	line := "infer: onnx runtime " + ort.GetVersion() + " runs on " + string(p)
	if len(refused) > 0 {
		line += " (" + strings.Join(refused, "; ") + ")"
	}
	return line
}

// loadWith loads every spec with provider p; on any failure it releases
// what it loaded.
func loadWith(p Provider, cfg *config, specs []modelSpec) ([]*session, error) {
	opts, err := sessionOptions(p, cfg)
	if err != nil {
		return nil, err
	}
	defer opts.Destroy()
	if err := setExternalDataDir(opts, specs); err != nil {
		return nil, err
	}
	sessions := make([]*session, 0, len(specs))
	for _, spec := range specs {
		s, err := ort.NewDynamicAdvancedSessionWithONNXData(spec.onnx, spec.inputs, spec.outputs, opts)
		if err != nil {
			destroyAll(sessions)
			return nil, fmt.Errorf("loading %s on %s: %w", spec.path, p, err)
		}
		spec.onnx = nil // ONNX Runtime has its own copy
		sessions = append(sessions, &session{spec: spec, ort: s})
	}
	return sessions, nil
}

// sessionOptions builds ONNX Runtime session options for provider p. A
// provider that cannot be registered returns ErrProviderUnavailable.
func sessionOptions(p Provider, cfg *config) (*ort.SessionOptions, error) {
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("creating onnx runtime session options: %w", err)
	}
	if err := configureSession(opts, p, cfg); err != nil {
		opts.Destroy()
		return nil, err
	}
	return opts, nil
}

func configureSession(opts *ort.SessionOptions, p Provider, cfg *config) error {
	if err := opts.SetIntraOpNumThreads(cfg.threads); err != nil {
		return fmt.Errorf("setting %d intra-op threads: %w", cfg.threads, err)
	}
	// Nodes of these models run one after another: a second pool would only
	// compete for the same cores.
	if err := opts.SetInterOpNumThreads(1); err != nil {
		return fmt.Errorf("setting inter-op threads: %w", err)
	}
	switch p {
	case ProviderCPU:
		return nil
	case ProviderTensorRT:
		if err := gpuOnly(opts); err != nil {
			return err
		}
		if err := appendTensorRT(opts, cfg); err != nil {
			return err
		}
		// TensorRT hands the nodes it cannot build to the next provider;
		// CUDA keeps them on the GPU.
		return appendCUDA(opts, ProviderTensorRT)
	case ProviderCUDA:
		if err := gpuOnly(opts); err != nil {
			return err
		}
		return appendCUDA(opts, ProviderCUDA)
	}
	panic("infer: session options for unknown provider " + string(p))
}

// disableCPUFallback is ONNX Runtime's session configuration key
// (onnxruntime_session_options_config_keys.h, kOrtSessionOptionsDisableCPUEPFallback)
// that makes a node no GPU provider takes an error at session creation
// instead of a silent run on the CPU.
const disableCPUFallback = "session.disable_cpu_ep_fallback"

// gpuOnly makes a session a GPU session in fact: a model that would run
// partly on the CPU fails to load, so the provider reported is the one that
// runs every node.
func gpuOnly(opts *ort.SessionOptions) error {
	if err := opts.AddSessionConfigEntry(disableCPUFallback, "1"); err != nil {
		return fmt.Errorf("disabling the cpu fallback (%s): %w", disableCPUFallback, err)
	}
	return nil
}

// The option names below are ONNX Runtime's (onnxruntime docs,
// "TensorRT Execution Provider" and "CUDA Execution Provider"). onnxruntime_go
// returns plain error strings when the provider libraries are missing, so
// any error here means the provider is unavailable (docs/toolchain.md, "ONNX Runtime").

func appendTensorRT(opts *ort.SessionOptions, cfg *config) error {
	trt, err := ort.NewTensorRTProviderOptions()
	if err != nil {
		return unavailable(ProviderTensorRT, err)
	}
	defer trt.Destroy()
	settings := map[string]string{
		"device_id":       "0",
		"trt_fp16_enable": boolOption(cfg.fp16),
	}
	if cfg.engineCache != "" {
		settings["trt_engine_cache_enable"] = "1"
		settings["trt_engine_cache_path"] = cfg.engineCache
	}
	if err := trt.Update(settings); err != nil {
		return unavailable(ProviderTensorRT, err)
	}
	if err := opts.AppendExecutionProviderTensorRT(trt); err != nil {
		return unavailable(ProviderTensorRT, err)
	}
	return nil
}

func appendCUDA(opts *ort.SessionOptions, requested Provider) error {
	cuda, err := ort.NewCUDAProviderOptions()
	if err != nil {
		return unavailable(requested, err)
	}
	defer cuda.Destroy()
	// TF32 matrix products (ONNX Runtime's default on Ampere and newer GPUs)
	// keep 10 mantissa bits: distances would drift from the CPU's in the
	// fourth significant digit. These models are small enough that full
	// float32 costs little.
	if err := cuda.Update(map[string]string{"device_id": "0", "use_tf32": "0"}); err != nil {
		return unavailable(requested, err)
	}
	if err := opts.AppendExecutionProviderCUDA(cuda); err != nil {
		return unavailable(requested, err)
	}
	return nil
}

// unavailable wraps why provider p cannot run, err from ONNX Runtime, in a
// *providerError, which is an ErrProviderUnavailable.
func unavailable(p Provider, err error) error {
	return &providerError{provider: p, reason: providerFailure(err), err: err}
}

// boolOption spells a boolean the way ONNX Runtime's provider options parse
// it.
func boolOption(on bool) string {
	if on {
		return "1"
	}
	return "0"
}
