package infer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ort "github.com/yalue/onnxruntime_go"
)

// TestGPUSessionDisablesCPUFallback checks that every GPU session is asked
// to refuse a CPU fallback before its provider is appended, and that ONNX
// Runtime honours the key: options with the fallback disabled and no GPU
// provider cannot load a real model, and the error says why in words.
func TestGPUSessionDisablesCPUFallback(t *testing.T) {
	f := loadFixture(t)
	cfg := defaultConfig()
	for i, p := range []Provider{ProviderCPU, ProviderCUDA, ProviderTensorRT} {
		opts, err := ort.NewSessionOptions()
		if err != nil {
			t.Fatal(err)
		}
		err = configureSession(opts, p, &cfg)
		if err != nil && !errors.Is(err, ErrProviderUnavailable) {
			t.Errorf("case %d %s: %v", i, p, err)
		}
		got, _ := opts.GetSessionConfigEntry(disableCPUFallback)
		if want := map[bool]string{true: "", false: "1"}[p == ProviderCPU]; got != want {
			t.Errorf("case %d %s: %s = %q, want %q", i, p, disableCPUFallback, got, want)
		}
		opts.Destroy()
	}

	opts, err := ort.NewSessionOptions()
	if err != nil {
		t.Fatal(err)
	}
	defer opts.Destroy()
	if err := gpuOnly(opts); err != nil {
		t.Fatal(err)
	}
	model := readFile(t, filepath.Join(f.twoTasks, "backbone.onnx"))
	s, err := ort.NewDynamicAdvancedSessionWithONNXData(model, []string{"image"}, []string{"features"}, opts)
	if err == nil {
		s.Destroy()
		t.Fatal("a session with the cpu fallback disabled and no gpu provider loaded the model")
	}
	if got := providerFailure(err); !strings.Contains(got, "fallback to the cpu is disabled") {
		t.Errorf("reason %q for %v, want one saying the cpu fallback is disabled", got, err)
	}
}

// brokenGPUChildEnv, when set, makes TestProvidersPresentButBroken the child
// that opens models with the ONNX Runtime library of $BICYC_ORT_LIB, whose
// directory holds GPU provider libraries that cannot load.
const brokenGPUChildEnv = "INFER_TEST_BROKEN_GPU_CHILD"

// realGPUDirEnv names, for this test only, the libonnxruntime.so that
// `make setup-gpu` installed on a machine without CUDA: the real npm
// providers are then checked too, besides the stand-ins.
const realGPUDirEnv = "BICYC_TEST_ORT_GPU_LIB"

// TestProvidersPresentButBroken checks provider selection when the GPU
// provider libraries are installed but the CUDA and TensorRT libraries they
// need are not: cuda and tensorrt fail with ErrProviderUnavailable naming
// the missing library and the fix, and auto runs on the cpu with one line
// that names, for each refused provider, what it misses. It runs in child
// processes (one ONNX Runtime library per process): with stand-in provider
// libraries built here by cc, whose ELF headers need libcublasLt.so.13 and
// libnvinfer.so.10 as the real ones do, and with the real providers from npm
// when $BICYC_TEST_ORT_GPU_LIB names their installation.
func TestProvidersPresentButBroken(t *testing.T) {
	if os.Getenv(brokenGPUChildEnv) != "" {
		checkBrokenProviders(t)
		return
	}
	libs := [][2]string{{"stand-ins", standInGPUDir(t)}}
	if real := os.Getenv(realGPUDirEnv); real != "" {
		libs = append(libs, [2]string{"npm providers", real})
	}
	for i, l := range libs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestProvidersPresentButBroken$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), brokenGPUChildEnv+"=1", LibraryPathEnv+"="+l[1])
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("case %d %s (%s): %v\n%s", i, l[0], l[1], err, out)
			continue
		}
		t.Logf("case %d %s:\n%s", i, l[0], out)
	}
}

// checkBrokenProviders is the child's half of TestProvidersPresentButBroken.
func checkBrokenProviders(t *testing.T) {
	f := loadFixture(t)
	cases := []struct {
		provider Provider
		want     []string
	}{
		{ProviderCUDA, []string{"cuda: ", "libonnxruntime_providers_cuda.so cannot load", "libcublasLt.so.13", "make setup-gpu", "LD_LIBRARY_PATH"}},
		{ProviderTensorRT, []string{"tensorrt: ", "libonnxruntime_providers_tensorrt.so cannot load", "libnvinfer.so.10", "make setup-gpu"}},
	}
	for i, c := range cases {
		cl, err := Open(context.Background(), f.twoTasks, WithProvider(c.provider), WithLog(io.Discard))
		if err == nil {
			cl.Close()
			t.Errorf("case %d %s: opened, want ErrProviderUnavailable", i, c.provider)
			continue
		}
		if !errors.Is(err, ErrProviderUnavailable) {
			t.Errorf("case %d %s: %v, want ErrProviderUnavailable", i, c.provider, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("case %d %s: error %q does not mention %q", i, c.provider, err, w)
			}
		}
	}

	var log bytes.Buffer
	cl, err := Open(context.Background(), f.twoTasks, WithLog(&log))
	if err != nil {
		t.Fatalf("auto: %v", err)
	}
	defer cl.Close()
	line := log.String()
	if cl.Provider() != ProviderCPU || strings.Count(line, "\n") != 1 {
		t.Errorf("auto ran on %s and wrote %q, want cpu and one line", cl.Provider(), line)
	}
	for _, w := range []string{"runs on cpu", "tensorrt: libonnxruntime_providers_tensorrt.so cannot load", "libnvinfer.so.10",
		"cuda: libonnxruntime_providers_cuda.so cannot load", "libcublasLt.so.13"} {
		if !strings.Contains(line, w) {
			t.Errorf("auto line %q does not mention %q", line, w)
		}
	}
	t.Logf("auto: %s", strings.TrimSpace(line))
}

// standInGPUDir makes a directory that looks like a GPU installation whose
// CUDA libraries are missing: the ONNX Runtime library the tests use, a
// loadable provider bridge, and provider libraries that need a library
// that does not exist. It returns the path of the ONNX Runtime library in it.
func standInGPUDir(t *testing.T) string {
	t.Helper()
	core, err := filepath.EvalSymlinks(DefaultLibraryPath())
	if err != nil {
		t.Fatalf("onnx runtime library: %v", err)
	}
	dir, stubs := t.TempDir(), t.TempDir()
	lib := filepath.Join(dir, "libonnxruntime.so")
	if err := os.WriteFile(lib, readFile(t, core), 0o644); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(stubs, "empty.c")
	// The bridge's two entry points, as the real one exports them
	// (onnxruntime/core/providers/shared/common.cc).
	bridge := "static const void *host;\nvoid Provider_SetHost(const void *p) { host = p; }\nconst void *Provider_GetHost(void) { return host; }\n"
	if err := os.WriteFile(src, []byte(bridge), 0o644); err != nil {
		t.Fatal(err)
	}
	cc := func(out string, args ...string) {
		t.Helper()
		args = append([]string{"-shared", "-fPIC", "-o", out, src}, args...)
		if b, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
			t.Fatalf("cc %v (cc is needed by cgo anyway): %v\n%s", args, err, b)
		}
	}
	cc(filepath.Join(dir, providersSharedLib))
	for _, p := range [][2]string{{providersCUDALib, "libcublasLt.so.13"}, {providersTensorRTLib, "libnvinfer.so.10"}} {
		stub := filepath.Join(stubs, p[1])
		cc(stub, "-Wl,-soname,"+p[1])
		cc(filepath.Join(dir, p[0]), "-Wl,--no-as-needed", "-L"+stubs, "-l:"+p[1])
		if err := os.Remove(stub); err != nil {
			t.Fatal(err)
		}
	}
	return lib
}

func TestProviderFailure(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		msg, want string
	}{
		{"/onnxruntime_src/onnxruntime/core/session/provider_bridge_ort.cc:1988 onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library " +
			dir + "/libonnxruntime_providers_shared.so with error: " + dir + "/libonnxruntime_providers_shared.so: cannot open shared object file: No such file or directory",
			"no GPU provider libraries beside the onnx runtime library in " + dir},
		{"[ONNXRuntimeError] : 1 : FAIL : Failed to load library " + dir + "/libonnxruntime_providers_tensorrt.so with error: x",
			"libonnxruntime_providers_tensorrt.so is not installed in " + dir},
		{"TensorRT execution provider is not enabled in this build.", "not in this onnx runtime build"},
		{"[ONNXRuntimeError] : 1 : FAIL : This session contains graph nodes that are assigned to the default CPU EP, but fallback to CPU EP has been explicitly disabled by the user.",
			"a node of the model has no GPU kernel and the fallback to the cpu is disabled"},
		{"/src/x.cc:12 f() [ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : CUDA failure 100: no CUDA-capable device is detected\nmore",
			"CUDA failure 100: no CUDA-capable device is detected"},
	}
	for i, c := range cases {
		if got := providerFailure(errors.New(c.msg)); got != c.want {
			t.Errorf("case %d: %q, want %q", i, got, c.want)
		}
	}
	wrapped := unavailable(ProviderCUDA, errors.New(cases[0].msg))
	if got := providerFailure(wrapped); got != cases[0].want {
		t.Errorf("wrapped: %q, want %q", got, cases[0].want)
	}
	if !errors.Is(wrapped, ErrProviderUnavailable) {
		t.Errorf("%v is not ErrProviderUnavailable", wrapped)
	}
}

// TestCompareWithCPU checks the self-check's arithmetic on two CPU
// sessions: the same distances give zero differences and the same closest
// class, and a distance moved by 0.5 shows as that difference.
func TestCompareWithCPU(t *testing.T) {
	f := loadFixture(t)
	a, b := openCPU(t, f.twoTasks, WithTopK(10)), openCPU(t, f.twoTasks, WithTopK(10))
	inputs := make([]Input, 40)
	for i := range inputs {
		var err error
		if inputs[i], err = a.Prepare(fashionImage(f.test, 7*i)); err != nil {
			t.Fatal(err)
		}
	}
	want, err := distances(context.Background(), a, inputs, 16)
	if err != nil {
		t.Fatal(err)
	}
	s := CheckSettings{LatencyRuns: 5, Batch: 8, MinDuration: time.Millisecond}
	var run ProviderRun
	if err := compare(context.Background(), b, inputs, want, s, &run); err != nil {
		t.Fatal(err)
	}
	if *run.MaxAbsDiff != 0 || *run.MaxRelDiff != 0 || run.SameTop1 != len(inputs) || !(run.Throughput > 0) || !(run.P50Batch1 > 0) {
		t.Errorf("same model: %+v", run)
	}
	last := len(want[3]) - 1
	want[3][last].Distance += 0.5
	run = ProviderRun{}
	if err := compare(context.Background(), b, inputs, want, s, &run); err != nil {
		t.Fatal(err)
	}
	if d := *run.MaxAbsDiff; math.Abs(d-0.5) > 1e-3 {
		t.Errorf("max |difference| %v, want 0.5", d)
	}
}
