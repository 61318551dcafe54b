package cuda

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/gpu/internal/cudakernels"
	"github.com/bicyc/bicyc/gpu/internal/cudamock"
)

// openMock loads the CPU stand-in for the CUDA libraries (package gpu/internal/cudamock) into a
// Runtime of its own.
func openMock(t *testing.T) *Runtime {
	t.Helper()
	dir := t.TempDir()
	if err := cudamock.Install(dir); err != nil {
		t.Fatalf("building the CUDA stand-in needs C and C++ compilers (cc, c++): %v", err)
	}
	r, err := open([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestMockRuntime: against the stand-in, Open describes the device and says where each library came from.
func TestMockRuntime(t *testing.T) {
	r := openMock(t)
	d := r.Device
	if d.Name != "mock GPU" || d.ComputeCapability != "9.0" || d.CUDNNVersion != 91000 || d.NVRTCVersion != "13.0" || d.Count != 1 {
		t.Errorf("device %+v", d)
	}
	if len(r.Libraries) != 5 {
		t.Fatalf("libraries %+v", r.Libraries)
	}
	for _, l := range r.Libraries {
		if l.Path == loaderPath || l.Note != "" {
			t.Errorf("library %+v: want it from the stand-in's folder, with no note", l)
		}
	}
}

// TestGemmLayout: Gemm's row-major product through cuBLAS's column-major call, for every transposition,
// against the product computed here; the stand-in computes what cuBLAS documents.
func TestGemmLayout(t *testing.T) {
	r := openMock(t)
	rng := rand.New(rand.NewPCG(1, 2))
	const m, n, k = 5, 7, 3
	for _, tc := range []struct{ ta, tb bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		a, b := make([]float32, m*k), make([]float32, k*n)
		for i := range a {
			a[i] = rng.Float32() - 0.5
		}
		for i := range b {
			b[i] = rng.Float32() - 0.5
		}
		// op(a)[i,l] and op(b)[l,j] of the row-major arrays.
		opA := func(i, l int) float32 {
			if tc.ta {
				return a[l*m+i]
			}
			return a[i*k+l]
		}
		opB := func(l, j int) float32 {
			if tc.tb {
				return b[j*k+l]
			}
			return b[l*n+j]
		}
		bufA, _ := r.Alloc(4 * len(a))
		bufB, _ := r.Alloc(4 * len(b))
		bufC, _ := r.Alloc(4 * m * n)
		if err := Upload(bufA, a); err != nil {
			t.Fatal(err)
		}
		if err := Upload(bufB, b); err != nil {
			t.Fatal(err)
		}
		if err := r.Gemm(4, tc.ta, tc.tb, m, n, k, bufA, bufB, bufC); err != nil {
			t.Fatal(err)
		}
		c := make([]float32, m*n)
		if err := Download(c, bufC); err != nil {
			t.Fatal(err)
		}
		for i := range m {
			for j := range n {
				var want float64
				for l := range k {
					want += float64(opA(i, l)) * float64(opB(l, j))
				}
				if math.Abs(float64(c[i*n+j])-want) > 1e-6 {
					t.Errorf("transA %v transB %v: c[%d,%d] = %g, want %g", tc.ta, tc.tb, i, j, c[i*n+j], want)
				}
			}
		}
		for _, buf := range []*Buffer{bufA, bufB, bufC} {
			if err := buf.Free(); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestKernelLaunch: a kernel compiled through NVRTC gets its parameters in order (device pointers and an
// int32), on the primary context; the stand-in runs the host build of the same source and refuses another.
func TestKernelLaunch(t *testing.T) {
	r := openMock(t)
	if _, err := r.Compile("relu_forward", `extern "C" __global__ void relu_forward(const float* x, float* y, int n) { }`); err == nil ||
		!strings.Contains(err.Error(), "nvrtcCreateProgram(relu_forward)") {
		t.Errorf("a source the stand-in did not build: %v", err)
	}
	src, err := cudakernels.Source("relu_forward")
	if err != nil {
		t.Fatal(err)
	}
	k, err := r.Compile("relu_forward", src)
	if err != nil {
		t.Fatal(err)
	}
	x := []float32{-2, -0.5, 0, 0.5, 3}
	bx, _ := r.Alloc(4 * len(x))
	by, _ := r.Alloc(4 * len(x))
	if err := Upload(bx, x); err != nil {
		t.Fatal(err)
	}
	if err := k.Launch(len(x), bx, by, int32(len(x))); err != nil {
		t.Fatal(err)
	}
	y := make([]float32, len(x))
	if err := Download(y, by); err != nil {
		t.Fatal(err)
	}
	for i, want := range []float32{0, 0, 0, 0.5, 3} {
		if y[i] != want {
			t.Errorf("y[%d] = %g, want %g", i, y[i], want)
		}
	}
}
