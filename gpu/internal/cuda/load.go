package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/ebitengine/purego"
)

// ErrUnavailable is wrapped by every error of Open: a CUDA library could not be loaded, lacks a function
// bicyc calls, or no GPU could be used. Callers that fall back to the CPU branch on it.
var ErrUnavailable = errors.New("cuda: not available")

// libSpec is one library to load: the file names tried, newest first, and the libraries preloaded before it
// from the folder it was found in (dependencies it opens by name at run time).
type libSpec struct {
	what      string   // what it is, for messages: "CUDA runtime"
	names     []string // file names, preferred first
	preload   []string // loaded first from the same folder, best effort
	driverLib bool     // installed with the driver: the loader's path is the usual place
}

var (
	specDriver = libSpec{what: "CUDA driver", names: []string{"libcuda.so.1"}, driverLib: true}
	specRT     = libSpec{what: "CUDA runtime", names: []string{"libcudart.so.13", "libcudart.so.12"}}
	specBLAS   = libSpec{what: "cuBLAS", names: []string{"libcublas.so.13", "libcublas.so.12"},
		preload: []string{"libcublasLt.so.13", "libcublasLt.so.12"}}
	specDNN = libSpec{what: "cuDNN 9", names: []string{"libcudnn.so.9"},
		preload: []string{"libcudnn_graph.so.9", "libcudnn_engines_precompiled.so.9",
			"libcudnn_engines_runtime_compiled.so.9", "libcudnn_heuristic.so.9", "libcudnn_ops.so.9",
			"libcudnn_cnn.so.9"}}
	specNVRTC = libSpec{what: "NVRTC", names: []string{"libnvrtc.so.13", "libnvrtc.so.12"},
		preload: []string{"libnvrtc-builtins.so.13.0", "libnvrtc-builtins.so.12.9", "libnvrtc-builtins.so.12.8"}}
)

// Library says where one CUDA library was loaded from.
type Library struct {
	What string `json:"what"`           // "cuDNN 9"
	Name string `json:"name"`           // file name loaded, e.g. libcudnn.so.9
	Path string `json:"path"`           // the folder it came from, or "(loader path)" for the loader's own search
	Note string `json:"note,omitempty"` // preloaded companions that could not be loaded, if any
}

// LoadError lists every library that could not be loaded (or lacked a function) with the places tried.
type LoadError struct {
	Problems []string // one line per library
	Dirs     []string // the folders searched besides the loader's path
}

func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString("cuda: cannot load ")
	b.WriteString(strings.Join(e.Problems, "; "))
	if len(e.Dirs) == 0 {
		b.WriteString(" (searched the dynamic loader's path only: no BICYC_CUDA_LIB_PATH, no nvidia-* Python wheel or CUDA toolkit folder found)")
	} else {
		fmt.Fprintf(&b, " (searched the dynamic loader's path and %s)", strings.Join(e.Dirs, ", "))
	}
	b.WriteString("; set BICYC_CUDA_LIB_PATH to the folders holding them (docs/gpu.md)")
	return b.String()
}

func (e *LoadError) Unwrap() error { return ErrUnavailable }

// SearchDirs returns the folders searched for CUDA libraries besides the dynamic loader's own path, in
// order: BICYC_CUDA_LIB_PATH's entries, then those of the patterns below that exist (see the package doc).
func SearchDirs() []string {
	return appendUnique(envDirs(), wheelAndToolkitDirs()...)
}

// envDirs returns BICYC_CUDA_LIB_PATH's folders.
func envDirs() []string {
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv("BICYC_CUDA_LIB_PATH")) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// wheelPatterns are where pip puts the nvidia-* wheels (nvidia/<component>/lib, or nvidia/cu13/lib for the
// CUDA 13 wheels) and torch/lib, for virtual environments, conda, user installs and the system Python; then a
// CUDA toolkit and the driver's usual folders.
func wheelAndToolkitDirs() []string {
	var roots []string
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if v := os.Getenv(env); v != "" {
			roots = append(roots, v+"/lib/python3*/site-packages")
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		roots = append(roots, home+"/.local/lib/python3*/site-packages")
	}
	roots = append(roots,
		"/opt/*/.venv/lib/python3*/site-packages", "/opt/conda/lib/python3*/site-packages",
		"/usr/local/lib/python3*/dist-packages", "/usr/local/lib/python3*/site-packages",
		"/usr/lib/python3/dist-packages", "/usr/lib/python3*/site-packages")
	var patterns []string
	for _, r := range roots {
		patterns = append(patterns, r+"/nvidia/*/lib", r+"/nvidia/*/lib64", r+"/torch/lib")
	}
	patterns = append(patterns, "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
		"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib/wsl/lib")
	var dirs []string
	for _, p := range patterns {
		matches, _ := filepath.Glob(p)
		sort.Strings(matches)
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && fi.IsDir() {
				dirs = append(dirs, m)
			}
		}
	}
	return dirs
}

func appendUnique(dst []string, add ...string) []string {
	seen := make(map[string]bool, len(dst))
	for _, d := range dst {
		seen[d] = true
	}
	for _, d := range add {
		if !seen[d] {
			seen[d] = true
			dst = append(dst, d)
		}
	}
	return dst
}

// loaderPath stands for the dynamic loader's own search in Library.Path.
const loaderPath = "(loader path)"

// openLib loads one library: from the first of BICYC_CUDA_LIB_PATH's folders that holds one of its names,
// else through the loader's own search, else from the first other folder that holds it. It returns the handle
// and where it came from, or an error naming every attempt that found a file but failed, or that none was found.
func openLib(s libSpec, envDirs, otherDirs []string) (uintptr, Library, error) {
	var failures []string
	try := func(dir, name string) (uintptr, bool) {
		path := name
		if dir != loaderPath {
			path = filepath.Join(dir, name)
			if _, err := os.Stat(path); err != nil {
				return 0, false
			}
			for _, p := range s.preload {
				if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
					// RTLD_GLOBAL: a companion loaded first satisfies the library's later dlopen by name.
					if _, err := dlopen(filepath.Join(dir, p)); err != nil {
						failures = append(failures, loaderFailure(filepath.Join(dir, p), err))
					}
				}
			}
		}
		h, err := dlopen(path)
		if err != nil {
			if dir != loaderPath || !strings.Contains(err.Error(), "No such file") {
				failures = append(failures, loaderFailure(path, err))
			}
			return 0, false
		}
		return h, true
	}
	order := append(append(append([]string{}, envDirs...), loaderPath), otherDirs...)
	for _, dir := range order {
		for _, name := range s.names {
			if h, ok := try(dir, name); ok {
				lib := Library{What: s.what, Name: name, Path: dir}
				if len(failures) > 0 {
					lib.Note = strings.Join(failures, "; ")
				}
				return h, lib, nil
			}
		}
	}
	msg := fmt.Sprintf("%s (%s): not found", s.what, strings.Join(s.names, " or "))
	if len(failures) > 0 {
		msg = fmt.Sprintf("%s (%s): %s", s.what, strings.Join(s.names, " or "), strings.Join(failures, "; "))
	}
	return 0, Library{}, errors.New(msg)
}

// dlopen opens a library with RTLD_NOW|RTLD_GLOBAL. The OS thread stays locked because dlerror's text is
// per thread: purego calls dlopen and dlerror separately, and a goroutine moved between the two reads
// another thread's (empty) error, which hides "No such file" and turns "not found" into a blank failure.
func dlopen(path string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

// dlsym is purego.Dlsym on one OS thread, for the reason given at dlopen.
func dlsym(handle uintptr, name string) (uintptr, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlsym(handle, name)
}

// symbolTable binds C functions of one library to Go function variables, collecting missing symbols.
type symbolTable struct {
	handle  uintptr
	lib     Library
	missing []string
}

// bind sets *fn (a pointer to a func variable) to the C function name, or records it as missing.
func (t *symbolTable) bind(fn any, name string) {
	addr, err := dlsym(t.handle, name)
	if err != nil || addr == 0 {
		t.missing = append(t.missing, name)
		return
	}
	purego.RegisterFunc(fn, addr)
}

// optional is bind for a function some versions lack: it reports whether it was found.
func (t *symbolTable) optional(fn any, name string) bool {
	addr, err := dlsym(t.handle, name)
	if err != nil || addr == 0 {
		return false
	}
	purego.RegisterFunc(fn, addr)
	return true
}

func (t *symbolTable) err() error {
	if len(t.missing) == 0 {
		return nil
	}
	return fmt.Errorf("%s (%s from %s): lacks %s", t.lib.What, t.lib.Name, t.lib.Path, strings.Join(t.missing, ", "))
}

// loaderFailure describes a failed dlopen of path; dlerror's text usually starts with the path already.
func loaderFailure(path string, err error) string {
	if strings.HasPrefix(err.Error(), path) {
		return err.Error()
	}
	return path + ": " + err.Error()
}
