package infer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/bicyc/bicyc/bundle"
)

// LibraryPathEnv is the environment variable that names the ONNX Runtime
// shared library when no explicit path is given (WithLibraryPath).
const LibraryPathEnv = "BICYC_ORT_LIB"

// InstalledLibraryPath is where scripts/setup.sh installs the ONNX Runtime
// shared library (1.29.0, from the npm package pinned in
// scripts/onnxruntime/package-lock.json).
const InstalledLibraryPath = "/usr/local/lib/bicyc/libonnxruntime.so"

// requiredAPIVersion is the ONNX Runtime C API version that
// github.com/yalue/onnxruntime_go v1.27.0 asks for (ORT_API_VERSION in its
// onnxruntime_c_api.h); ONNX Runtime 1.24.x is the first release serving it.
// Manifests state that release as bundle.MinRuntimeVersion.
const requiredAPIVersion = 24

var (
	// ErrRuntimeNotFound means the ONNX Runtime shared library does not
	// exist or is not a loadable ONNX Runtime library.
	ErrRuntimeNotFound = errors.New("onnx runtime library not found or not loadable")
	// ErrRuntimeTooOld means the library loaded but does not serve the C API
	// version that onnxruntime_go needs (ONNX Runtime >= 1.24).
	ErrRuntimeTooOld = errors.New("onnx runtime library too old")
	// ErrRuntimeConflict means the process already runs ONNX Runtime from a
	// different library, or another package initialised it behind infer's
	// back; a process can hold only one ONNX Runtime environment.
	ErrRuntimeConflict = errors.New("onnx runtime already initialised")
)

// runtimeFix is appended to every library error: it says how to get a
// library that works.
const runtimeFix = "run scripts/setup.sh (installs ONNX Runtime 1.29.0 into " +
	InstalledLibraryPath + "), or set " + LibraryPathEnv +
	" to a libonnxruntime.so of version >= " + bundle.MinRuntimeVersion + " (a GPU build of ONNX Runtime, such as make setup-gpu installs, for the cuda and tensorrt providers)"

// runtimeEnv is the process's single ONNX Runtime environment. onnxruntime_go
// keeps the environment in package globals, so infer owns it here, once,
// and never destroys it: sessions of any Classifier may still use it.
var runtimeEnv struct {
	mu      sync.Mutex
	library string // absolute path of the loaded library; "" until loaded
}

// DefaultLibraryPath returns the ONNX Runtime library that Open loads when
// WithLibraryPath is not given: $BICYC_ORT_LIB if set, else
// InstalledLibraryPath.
func DefaultLibraryPath() string {
	if p := os.Getenv(LibraryPathEnv); p != "" {
		return p
	}
	return InstalledLibraryPath
}

// InitRuntime loads the ONNX Runtime shared library at path ("" means
// DefaultLibraryPath) and creates the process's ONNX Runtime environment.
// It is the one place in bicyc that initialises ONNX Runtime: other packages
// that run ONNX Runtime in the same process (tests of the exporter, for
// example) must call it instead of onnxruntime_go.InitializeEnvironment.
//
// InitRuntime is safe for concurrent use. Calling it again with the same
// library is a no-op; with a different library it returns
// ErrRuntimeConflict, because one process can load only one. A failed call
// leaves nothing initialised, so it can be retried (with another path, say).
// It returns the ONNX Runtime version string, such as "1.29.0".
//
// Errors wrap ErrRuntimeNotFound, ErrRuntimeTooOld or ErrRuntimeConflict and
// say how to fix the installation.
func InitRuntime(path string) (version string, err error) {
	if path == "" {
		path = DefaultLibraryPath()
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v; %s", ErrRuntimeNotFound, path, err, runtimeFix)
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	}

	info, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("%w: %q does not exist; %s", ErrRuntimeNotFound, path, runtimeFix)
	}
	if info.IsDir() {
		return "", fmt.Errorf("%w: %q is a directory; %s", ErrRuntimeNotFound, path, runtimeFix)
	}

	runtimeEnv.mu.Lock()
	defer runtimeEnv.mu.Unlock()
	switch {
	case runtimeEnv.library == abs:
		return ort.GetVersion(), nil
	case runtimeEnv.library != "":
		return "", fmt.Errorf("%w from %q: cannot also load %q in this process", ErrRuntimeConflict, runtimeEnv.library, path)
	case ort.IsInitialized():
		return "", fmt.Errorf("%w by another package: cannot load %q (call infer.InitRuntime instead of onnxruntime_go.InitializeEnvironment)", ErrRuntimeConflict, path)
	}

	ort.SetSharedLibraryPath(abs)
	// Fatal-only logging: every failure reaches the caller as an error, and
	// ONNX Runtime would otherwise print its own multi-line report of each
	// missing GPU provider library while infer probes for one.
	if err := ort.InitializeEnvironment(ort.WithLogLevelFatal()); err != nil {
		return "", classifyInitError(path, err)
	}
	runtimeEnv.library = abs
	return ort.GetVersion(), nil
}

// classifyInitError turns an onnxruntime_go initialisation error into one
// that names the problem and the fix. onnxruntime_go has no sentinels here:
// its messages are the only signal.
func classifyInitError(path string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "Error setting ORT API base"):
		// GetApi(24) returned NULL: the library is older than 1.24.
		return fmt.Errorf("%w: %q does not serve the ONNX Runtime C API version %d that onnxruntime_go v1.27.0 needs (ONNX Runtime >= 1.24): %v; %s",
			ErrRuntimeTooOld, path, requiredAPIVersion, err, runtimeFix)
	case strings.Contains(msg, "Error loading ONNX shared library"), strings.Contains(msg, "OrtGetApiBase"):
		return fmt.Errorf("%w: %q: %v; %s", ErrRuntimeNotFound, path, err, runtimeFix)
	default:
		return fmt.Errorf("initialising onnx runtime from %q: %w", path, err)
	}
}
