package infer

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The GPU provider libraries of ONNX Runtime, which its core loads from its
// own directory (provider_bridge_ort.cc): the shared bridge first, then the
// provider asked for. `make setup-gpu` installs them beside a copy of the
// core (scripts/setup-gpu.sh).
const (
	providersSharedLib   = "libonnxruntime_providers_shared.so"
	providersCUDALib     = "libonnxruntime_providers_cuda.so"
	providersTensorRTLib = "libonnxruntime_providers_tensorrt.so"
)

// providerError is why a GPU provider cannot run: Reason in a few words,
// for the start-up line, and the error ONNX Runtime gave.
type providerError struct {
	provider Provider
	reason   string
	err      error
}

// Error names the provider, the reason, ONNX Runtime's message and the fix.
func (e *providerError) Error() string {
	return fmt.Sprintf("%v: %s: %s (onnx runtime: %s); %s needs the GPU build of ONNX Runtime: run `make setup-gpu`, "+
		"set %s to the libonnxruntime.so it installs and LD_LIBRARY_PATH to the CUDA 13 libraries (docs/gpu.md), "+
		"or use the cpu provider", ErrProviderUnavailable, e.provider, e.reason, firstLine(e.err), e.provider, LibraryPathEnv)
}

func (e *providerError) Unwrap() []error { return []error{ErrProviderUnavailable, e.err} }

// failedLoad matches ONNX Runtime's report of a provider library dlopen
// could not load: the library's path and the loader's message.
var failedLoad = regexp.MustCompile(`Failed to load library (\S+) with error: ([^\n]*)`)

// ortPrefix is the source location and status code ONNX Runtime puts before
// its messages ("/onnxruntime_src/...cc:1988 ... [ONNXRuntimeError] : 1 : FAIL : ").
var ortPrefix = regexp.MustCompile(`^.*\[ONNXRuntimeError\] : \d+ : [A-Z_]+ : `)

// providerFailure condenses why a provider could not run into a few words
// that name the cause: the library that is missing, or what ONNX Runtime
// refused.
func providerFailure(err error) string {
	if pe, ok := errors.AsType[*providerError](err); ok {
		return pe.reason
	}
	msg := err.Error()
	if m := failedLoad.FindStringSubmatch(msg); m != nil {
		return libraryFailure(m[1], m[2])
	}
	switch {
	case strings.Contains(msg, "not enabled in this build"):
		return "not in this onnx runtime build"
	case strings.Contains(msg, "assigned to the default CPU EP"):
		return "a node of the model has no GPU kernel and the fallback to the cpu is disabled"
	}
	return firstLine(err)
}

// libraryFailure says why the provider library at path did not load: it,
// or the bridge, is not installed, or libraries it needs are not found
// (named, in the order the library lists them).
func libraryFailure(path, loaderMsg string) string {
	dir, base := filepath.Dir(path), filepath.Base(path)
	if _, err := os.Stat(path); err != nil {
		if base == providersSharedLib {
			return "no GPU provider libraries beside the onnx runtime library in " + dir
		}
		return base + " is not installed in " + dir
	}
	if missing := missingLibraries(path); len(missing) > 0 {
		return base + " cannot load: " + strings.Join(missing, ", ") + " not found"
	}
	return base + " cannot load: " + loaderMsg
}

// firstLine is err's message up to its first newline, without ONNX
// Runtime's source-location prefix.
func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return ortPrefix.ReplaceAllString(msg, "")
}

// missingLibraries returns the libraries that the ELF shared object at path
// needs (DT_NEEDED) and the dynamic loader would not find: not in its
// RPATH/RUNPATH, LD_LIBRARY_PATH, the directories of /etc/ld.so.conf or the
// default ones (ld.so(8)). It looks one level deep, enough to name what to
// install or put on LD_LIBRARY_PATH; a library it cannot read returns nil.
func missingLibraries(path string) []string {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	needed, err := f.ImportedLibraries()
	if err != nil {
		return nil
	}
	var dirs []string
	origin := filepath.Dir(path)
	for _, tag := range []elf.DynTag{elf.DT_RPATH, elf.DT_RUNPATH} {
		values, _ := f.DynString(tag)
		for _, v := range values {
			for _, d := range filepath.SplitList(v) {
				dirs = append(dirs, strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", origin), "$ORIGIN", origin))
			}
		}
	}
	dirs = append(dirs, filepath.SplitList(os.Getenv("LD_LIBRARY_PATH"))...)
	dirs = append(dirs, ldConfigDirs("/etc/ld.so.conf", 0)...)
	dirs = append(dirs, "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
	var missing []string
	for _, lib := range needed {
		if !foundIn(lib, dirs) {
			missing = append(missing, lib)
		}
	}
	return missing
}

func foundIn(lib string, dirs []string) bool {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, lib)); err == nil {
			return true
		}
	}
	return false
}

// ldConfigDirs returns the library directories listed in an ld.so.conf
// file, following its include lines (globs) a few levels deep.
func ldConfigDirs(path string, depth int) []string {
	b, err := os.ReadFile(path)
	if err != nil || depth > 4 {
		return nil
	}
	var dirs []string
	for line := range strings.Lines(string(b)) {
		line, _, _ = strings.Cut(line, "#")
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "include"); ok {
			pattern := strings.TrimSpace(rest)
			if !filepath.IsAbs(pattern) {
				pattern = filepath.Join(filepath.Dir(path), pattern)
			}
			matches, _ := filepath.Glob(pattern)
			for _, m := range matches {
				dirs = append(dirs, ldConfigDirs(m, depth+1)...)
			}
			continue
		}
		if line != "" {
			dirs = append(dirs, line)
		}
	}
	return dirs
}
