// Package cudamock builds a stand-in for the CUDA libraries, for the tests of machines without a GPU: one shared
// library (mockcuda.c.in, C) that exports every function package cuda binds, with the semantics NVIDIA documents
// computed on the CPU, installed under the file name of each library. It checks bicyc's side of the calls
// (argument order, which buffer is which, cuBLAS's column-major layout, kernel parameters), not CUDA: the
// first GPU checks that (docs/gpu.md). Kernel launches run the host build of the very sources NVRTC compiles
// (package gpu/internal/cudakernels), and a program whose source differs from that build's is refused.
package cudamock

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/bicyc/bicyc/gpu/internal/cudakernels"
)

//go:embed mockcuda.c.in
var source []byte

// Names are the library files Install creates, one per library package cuda loads.
var Names = []string{"libcuda.so.1", "libcudart.so.13", "libcublas.so.13", "libcudnn.so.9", "libnvrtc.so.13"}

// Install compiles the mock with the C compiler (cc, or $CC), links it with the host build of every NVRTC
// kernel (cudakernels.HostObject, which needs c++ or $CXX) into dir, and links each of Names to the library.
func Install(dir string) error {
	src := filepath.Join(dir, "mockcuda.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return err
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	obj := filepath.Join(dir, "mockcuda.o")
	if out, err := exec.Command(cc, "-c", "-fPIC", "-O1", "-o", obj, src).CombinedOutput(); err != nil {
		return fmt.Errorf("mock: %s: %v: %s", cc, err, out)
	}
	kernels, err := cudakernels.HostObject(dir)
	if err != nil {
		return fmt.Errorf("mock: %w", err)
	}
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "c++"
	}
	lib := filepath.Join(dir, "libmockcuda.so")
	if out, err := exec.Command(cxx, "-shared", "-o", lib, obj, kernels, "-lm").CombinedOutput(); err != nil {
		return fmt.Errorf("mock: %s: %v: %s", cxx, err, out)
	}
	for _, name := range Names {
		if err := os.Symlink(lib, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}
