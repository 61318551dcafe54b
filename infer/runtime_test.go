package infer

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// initLibraryEnv, when set, makes the test binary a child process that only
// calls InitRuntime on its value and prints the error: the ONNX Runtime
// environment is per process, so library failures are tested in children
// that start without one.
const initLibraryEnv = "INFER_TEST_INIT_LIBRARY"

func TestMain(m *testing.M) {
	if path := os.Getenv(initLibraryEnv); path != "" {
		_, err := InitRuntime(path)
		switch {
		case err == nil:
			fmt.Println("ok")
		case errors.Is(err, ErrRuntimeTooOld):
			fmt.Println("ErrRuntimeTooOld:", err)
		case errors.Is(err, ErrRuntimeNotFound):
			fmt.Println("ErrRuntimeNotFound:", err)
		default:
			fmt.Println("other:", err)
		}
		os.Exit(0)
	}
	code := m.Run()
	if fixtureRoot != "" {
		os.RemoveAll(fixtureRoot)
	}
	os.Exit(code)
}

// initInChild runs InitRuntime(path) in a fresh test process and returns
// what it printed.
func initInChild(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), initLibraryEnv+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	return string(out)
}

// requireRuntime initialises ONNX Runtime from DefaultLibraryPath. A
// missing library fails the test: the test command installs it
// (scripts/setup.sh), so its absence is a broken setup, not a reason to
// skip.
func requireRuntime(t testing.TB) string {
	t.Helper()
	version, err := InitRuntime("")
	if err != nil {
		t.Fatalf("onnx runtime: %v", err)
	}
	return version
}

func TestInitRuntimeConcurrentAndIdempotent(t *testing.T) {
	want := requireRuntime(t)
	if !strings.HasPrefix(want, "1.") {
		t.Fatalf("version %q", want)
	}
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() {
			var got string
			got, errs[i] = InitRuntime(DefaultLibraryPath())
			if errs[i] == nil && got != want {
				errs[i] = fmt.Errorf("version %q, want %q", got, want)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
}

func TestInitRuntimeRefusesSecondLibrary(t *testing.T) {
	requireRuntime(t)
	other := filepath.Join(t.TempDir(), "libonnxruntime.so")
	if err := os.WriteFile(other, []byte("not loaded"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := InitRuntime(other)
	if !errors.Is(err, ErrRuntimeConflict) {
		t.Fatalf("error %v, want ErrRuntimeConflict", err)
	}
	if !strings.Contains(err.Error(), other) {
		t.Errorf("error %q does not name %s", err, other)
	}
}

func TestInitRuntimeMissingLibrary(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, path string
	}{
		{"no such file", filepath.Join(dir, "missing", "libonnxruntime.so")},
		{"directory", dir},
	}
	for i, c := range cases {
		_, err := InitRuntime(c.path)
		if !errors.Is(err, ErrRuntimeNotFound) {
			t.Errorf("case %d %s: error %v, want ErrRuntimeNotFound", i, c.name, err)
			continue
		}
		for _, hint := range []string{c.path, "scripts/setup.sh", LibraryPathEnv, ">= 1.24", "GPU build"} {
			if !strings.Contains(err.Error(), hint) {
				t.Errorf("case %d %s: error %q does not mention %q", i, c.name, err, hint)
			}
		}
	}
}

func TestInitRuntimeNotALibrary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "libonnxruntime.so")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := initInChild(t, path)
	if !strings.HasPrefix(out, "ErrRuntimeNotFound:") || !strings.Contains(out, "scripts/setup.sh") {
		t.Errorf("child printed %q, want ErrRuntimeNotFound with the fix", out)
	}
}

// oldRuntimeSource is a stand-in for ONNX Runtime 1.16: the same exported
// entry point, whose GetApi returns NULL for any API version above 16, as
// real releases do for versions they do not serve.
const oldRuntimeSource = `
#include <stddef.h>
typedef struct {
	const void *(*GetApi)(unsigned int version);
	const char *(*GetVersionString)(void);
} OrtApiBase;
static const void *get_api(unsigned int version) { return NULL; }
static const char *version_string(void) { return "1.16.3"; }
static const OrtApiBase base = { get_api, version_string };
const OrtApiBase *OrtGetApiBase(void) { return &base; }
`

func TestInitRuntimeTooOld(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "old.c")
	lib := filepath.Join(dir, "libonnxruntime.so.1.16.3")
	if err := os.WriteFile(src, []byte(oldRuntimeSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cc", "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("building the stand-in library (cc is needed by cgo anyway): %v\n%s", err, out)
	}
	out := initInChild(t, lib)
	if !strings.HasPrefix(out, "ErrRuntimeTooOld:") {
		t.Fatalf("child printed %q, want ErrRuntimeTooOld", out)
	}
	for _, hint := range []string{"API version 24", ">= 1.24", "scripts/setup.sh", LibraryPathEnv} {
		if !strings.Contains(out, hint) {
			t.Errorf("error %q does not mention %q", out, hint)
		}
	}
}
