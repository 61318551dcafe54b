package cudakernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/bicyc/bicyc/gpu/internal/cuda"
)

// host is the host build of the kernels (HostLibrary), loaded once by TestMain.
var host struct {
	launch func(name string, gx, gy, gz, bx, by, bz uint32, params *unsafe.Pointer) int32
	source func(name string) *byte
	err    error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cudakernels")
	if err != nil {
		panic(err)
	}
	host.err = loadHost(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func loadHost(dir string) error {
	lib, err := HostLibrary(dir)
	if err != nil {
		return err
	}
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return err
	}
	purego.RegisterLibFunc(&host.launch, h, HostSymbols[0])
	purego.RegisterLibFunc(&host.source, h, HostSymbols[1])
	return nil
}

func needHost(t *testing.T) {
	t.Helper()
	if host.err != nil {
		t.Fatalf("the host build of the kernels needs a C++ compiler (c++ or $CXX), as the CUDA stand-in does: %v", host.err)
	}
}

// launch runs kernel name on n threads in blocks of block threads, rounded up to whole blocks as
// cuda.Kernel.Launch does (with block = cuda.BlockThreads), but at least one block: for n = 0, where Launch
// starts nothing, a block then checks the kernel's index guard; args are []float32 or []float64 (device
// buffers), int32 or float32, passed as cuLaunchKernel passes them.
func launch(t *testing.T, name string, n, block int, args ...any) {
	t.Helper()
	vals := make([]uint64, len(args))
	ptrs := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case []float32:
			if len(v) > 0 {
				vals[i] = uint64(uintptr(unsafe.Pointer(&v[0])))
			}
		case []float64:
			if len(v) > 0 {
				vals[i] = uint64(uintptr(unsafe.Pointer(&v[0])))
			}
		case int:
			vals[i] = uint64(uint32(int32(v)))
		case float32:
			*(*float32)(unsafe.Pointer(&vals[i])) = v
		default:
			t.Fatalf("launch %s: argument %d is %T", name, i, a)
		}
		ptrs[i] = unsafe.Pointer(&vals[i])
	}
	grid := max(1, (n+block-1)/block)
	var p *unsafe.Pointer
	if len(ptrs) > 0 {
		p = &ptrs[0]
	}
	if code := host.launch(name, uint32(grid), 1, 1, uint32(block), 1, 1, p); code != 0 {
		t.Fatalf("launch %s: status %d", name, code)
	}
	runtime.KeepAlive(args)
	runtime.KeepAlive(vals)
}

// blocks are the block sizes every kernel runs with: Launch's, and a small odd one, so that a block of
// threads that straddles the end of the data is always met.
var blocks = []int{cuda.BlockThreads, 7}

// TestHostSources: every kernel is in the host build, compiled from the very text Source returns (what
// NVRTC compiles), and the files follow the package's rules.
func TestHostSources(t *testing.T) {
	needHost(t)
	names := Names()
	for _, want := range []string{"relu_forward", "gelu_backward", "channel_affine", "sgd_update", "softmax_cross_entropy"} {
		if !slices.Contains(names, want) {
			t.Errorf("kernel %s missing from %v", want, names)
		}
	}
	for _, name := range names {
		src, err := Source(name)
		if err != nil {
			t.Fatal(err)
		}
		p := host.source(name)
		if p == nil {
			t.Errorf("%s: not in the host build", name)
			continue
		}
		if got := cString(p); got != src {
			t.Errorf("%s: the host build's source differs from Source's", name)
		}
		if !strings.Contains(src, `extern "C" __global__ void `+name+"(") {
			t.Errorf("%s.cu does not define extern \"C\" __global__ void %s(", name, name)
		}
		for _, banned := range []string{"#include", "__shared__", "__syncthreads"} {
			if strings.Contains(src, banned) {
				t.Errorf("%s.cu uses %s, which the shim does not provide", name, banned)
			}
		}
	}
	if code := host.launch("no_such_kernel", 1, 1, 1, 1, 1, 1, nil); code != 500 {
		t.Errorf("an unknown kernel: status %d, want 500", code)
	}
	if _, err := Source("no_such_kernel"); err == nil || !strings.Contains(err.Error(), "relu_forward") {
		t.Errorf("Source of an unknown kernel: %v", err)
	}
}

func cString(p *byte) string {
	var b []byte
	for q := unsafe.Pointer(p); *(*byte)(q) != 0; q = unsafe.Add(q, 1) {
		b = append(b, *(*byte)(q))
	}
	return string(b)
}

// randn returns n normal values of a fixed seed, times scale.
func randn(seed uint64, n int, scale float64) []float32 {
	r := rand.New(rand.NewPCG(seed, 44))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return v
}

// sentinel returns n copies of a value no kernel writes, to catch writes past the end.
func sentinel(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = -12345
	}
	return v
}

// closeTo fails unless got matches want within tol relative to want's largest magnitude (at least 1), and
// checks the element past the end (got has one more element than want) was not written.
func closeTo(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want)+1 {
		t.Fatalf("%s: %d values, want %d and a sentinel", what, len(got), len(want))
	}
	if got[len(want)] != -12345 {
		t.Errorf("%s: the kernel wrote past the end (%g)", what, got[len(want)])
	}
	var scale, worst float64 = 1, 0
	for _, v := range want {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	at := -1
	for i, v := range want {
		if d := math.Abs(float64(got[i]) - float64(v)); d > worst || math.IsNaN(d) {
			worst, at = d, i
			if math.IsNaN(d) {
				worst = math.Inf(1)
			}
		}
	}
	if tol > 0 {
		t.Logf("%s: largest relative difference %.3g (bound %g)", what, worst/scale, tol)
	}
	if worst/scale > tol {
		t.Errorf("%s: largest difference %.3g at %d (got %g, want %g), relative %.3g > %g", what, worst, at, got[at], want[at], worst/scale, tol)
	}
}

func label(name string, shape []int, block int) string {
	return fmt.Sprintf("%s %v block %d", name, shape, block)
}
