package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// These tests run on machines without CUDA (the project's CI) and on GPU machines alike: they build their own
// library folders, so their verdicts do not depend on what the machine has installed, except
// TestOpenOnThisMachine, which accepts both outcomes and checks each one's contract.

// TestLoadErrorNamesEveryLibrary: with a library folder holding nothing, loading fails naming each library
// bicyc needs, the folder searched and the way to point bicyc at the libraries.
func TestLoadErrorNamesEveryLibrary(t *testing.T) {
	dir := t.TempDir()
	if onLoaderPath("libcudart.so.13", "libcudart.so.12") {
		t.Skip("a CUDA runtime is on this machine's loader path: the not-found path cannot be shown here")
	}
	_, err := open([]string{dir}, nil)
	if err == nil {
		t.Fatal("open succeeded with an empty library folder")
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("error does not wrap ErrUnavailable: %v", err)
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{"CUDA runtime (libcudart.so.13 or libcudart.so.12): not found", "cuBLAS (libcublas.so.13",
		"cuDNN 9 (libcudnn.so.9): not found", "NVRTC (libnvrtc.so.13", dir, "BICYC_CUDA_LIB_PATH"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q", want)
		}
	}
}

// TestLoadErrorNamesBrokenFile: a file with a library's name that is no library is reported with its path and
// the loader's reason, and a companion that cannot load is reported too.
func TestLoadErrorNamesBrokenFile(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"libcudnn.so.9", "libcudnn_cnn.so.9"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("not a library"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := open([]string{dir}, nil)
	if err == nil {
		t.Fatal("open succeeded with a corrupt libcudnn.so.9")
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{filepath.Join(dir, "libcudnn.so.9") + ":", filepath.Join(dir, "libcudnn_cnn.so.9") + ":"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q", want)
		}
	}
	if !strings.Contains(msg, "ELF") && !strings.Contains(msg, "too short") {
		t.Errorf("error does not carry the loader's reason (invalid ELF header / file too short)")
	}
}

// TestLoadErrorNamesMissingFunctions: a real shared library under a CUDA library's name loads, and the error
// lists the functions it lacks. libm stands in for cuBLAS.
func TestLoadErrorNamesMissingFunctions(t *testing.T) {
	libm := "/lib/x86_64-linux-gnu/libm.so.6"
	if _, err := os.Stat(libm); err != nil {
		t.Skipf("no %s on this machine", libm)
	}
	dir := t.TempDir()
	if err := os.Symlink(libm, filepath.Join(dir, "libcublas.so.13")); err != nil {
		t.Fatal(err)
	}
	_, err := open([]string{dir}, nil)
	if err == nil {
		t.Fatal("open succeeded with libm as cuBLAS")
	}
	msg := err.Error()
	t.Log(msg)
	want := "cuBLAS (libcublas.so.13 from " + dir + "): lacks cublasCreate_v2, cublasDestroy_v2, cublasGetVersion_v2, cublasSetMathMode, cublasSgemm_v2, cublasDgemm_v2"
	if !strings.Contains(msg, want) {
		t.Errorf("error lacks %q", want)
	}
}

// TestSearchDirs: BICYC_CUDA_LIB_PATH's folders come first, in order, and a virtual environment's nvidia-*
// wheel folders (the layout of a PyTorch installation) are found.
func TestSearchDirs(t *testing.T) {
	venv := t.TempDir()
	wheels := []string{
		filepath.Join(venv, "lib/python3.12/site-packages/nvidia/cudnn/lib"),
		filepath.Join(venv, "lib/python3.12/site-packages/nvidia/cu13/lib"),
	}
	for _, d := range wheels {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("VIRTUAL_ENV", venv)
	t.Setenv("BICYC_CUDA_LIB_PATH", "/first:/second")
	dirs := SearchDirs()
	if len(dirs) < 2 || dirs[0] != "/first" || dirs[1] != "/second" {
		t.Errorf("SearchDirs starts %v, want /first, /second", dirs[:min(2, len(dirs))])
	}
	for _, d := range wheels {
		if !slices.Contains(dirs, d) {
			t.Errorf("SearchDirs lacks the wheel folder %s: %v", d, dirs)
		}
	}
}

// TestOpenOnThisMachine: Open either works (a GPU machine: then the device has a name and the libraries their
// folders) or fails wrapping ErrUnavailable with the fix in its message; a second call gives the same answer.
func TestOpenOnThisMachine(t *testing.T) {
	r, err := Open()
	r2, err2 := Open()
	if r != r2 || (err == nil) != (err2 == nil) {
		t.Error("a second Open gave another answer")
	}
	if err != nil {
		t.Logf("no CUDA here: %v", err)
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("error does not wrap ErrUnavailable: %v", err)
		}
		return
	}
	t.Logf("device %+v, libraries %+v", r.Device, r.Libraries)
	if r.Device.Name == "" || len(r.Libraries) != 5 {
		t.Errorf("device %+v, libraries %+v: want a name and five libraries", r.Device, r.Libraries)
	}
}

func onLoaderPath(names ...string) bool {
	for _, n := range names {
		if _, _, err := openLib(libSpec{what: n, names: []string{n}}, nil, nil); err == nil {
			return true
		}
	}
	return false
}

// TestLaunchArguments: a kernel argument of a type the launch cannot pass is refused before any CUDA call.
func TestLaunchArguments(t *testing.T) {
	k := &Kernel{name: "k"}
	err := k.Launch(10, int32(1), float32(2), "three")
	if err == nil || !strings.Contains(err.Error(), "argument 2 is string") {
		t.Errorf("Launch with a string argument: %v", err)
	}
}

// TestLoadErrorStableAcrossThreads: the loader's reason is read on the thread that failed to load, so many
// loads at once, with goroutines moving between threads, still report "not found" and never a blank reason.
func TestLoadErrorStableAcrossThreads(t *testing.T) {
	if onLoaderPath("libcudart.so.13", "libcudart.so.12") {
		t.Skip("a CUDA runtime is on this machine's loader path: the not-found path cannot be shown here")
	}
	dir := t.TempDir()
	want := "CUDA runtime (libcudart.so.13 or libcudart.so.12): not found"
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if _, _, err := openLib(specRT, nil, []string{dir}); err == nil || err.Error() != want {
					errs <- fmt.Sprint(err)
					return
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("load error %q, want %q", e, want)
	}
}
