package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// deviceChildEnv marks the child process of TestTrainCUDAMissingFunctions (CUDA loads once per process).
const deviceChildEnv = "BICYC_DEVICE_TEST_CHILD"

// TestTrainCUDAMissingFunctions: `bicyc train --set train.device=cuda` on a machine whose cuBLAS is not
// cuBLAS (libm under its name) fails before it loads data or writes the run, naming the library, where it
// was found and the functions it lacks.
func TestTrainCUDAMissingFunctions(t *testing.T) {
	if os.Getenv(deviceChildEnv) != "" {
		runs := os.Getenv(deviceChildEnv)
		_, err := runCLI(t, "train", "--set", "train.device=cuda", "--set", "run_dir="+runs, "--name", "gpu")
		if err == nil {
			t.Fatal("train with train.device cuda succeeded")
		}
		t.Logf("ERROR: %v", err)
		return
	}
	libm := "/lib/x86_64-linux-gnu/libm.so.6"
	if _, err := os.Stat(libm); err != nil {
		t.Skipf("no %s on this machine", libm)
	}
	libs, runs := t.TempDir(), t.TempDir()
	if err := os.Symlink(libm, filepath.Join(libs, "libcublas.so.13")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTrainCUDAMissingFunctions$", "-test.v")
	cmd.Env = append(os.Environ(), deviceChildEnv+"="+runs, "BICYC_CUDA_LIB_PATH="+libs)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
	want := "train.device cuda: cuda: cannot load "
	lacks := "cuBLAS (libcublas.so.13 from " + libs + "): lacks cublasCreate_v2"
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), lacks) {
		t.Errorf("child output lacks %q and %q:\n%s", want, lacks, out)
	}
	if entries, err := os.ReadDir(runs); err != nil || len(entries) != 0 {
		t.Errorf("the refused run wrote into %s: %v %v", runs, entries, err)
	}
}
