package main

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/infer"
)

// TestDoctor runs the self-check on real Fashion-MNIST images with the ONNX
// Runtime library of the test setup: the CPU is measured, and CUDA either
// runs with the CPU's distances (a GPU machine) or is reported with why it
// cannot (a CPU build), which fails the run only under --require.
func TestDoctor(t *testing.T) {
	model, test := testModel(t)
	dir := t.TempDir()
	for i := range 8 {
		f, err := os.Create(filepath.Join(dir, strconv.Itoa(i)+".png"))
		if err != nil {
			t.Fatal(err)
		}
		if err := png.Encode(f, fashionImage(test, i)); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	fast := []string{"--runs", "20", "--batch", "16", "--min-time", "20ms"}
	cases := []struct {
		args      []string
		images    int
		synthetic bool
		cudaRuns  bool // cuda is among the providers
		require   bool
	}{
		{[]string{"--providers", "cuda", dir}, 8, false, true, false},
		{[]string{"--providers", "cuda", "--require", "cuda", dir}, 8, false, true, true},
		{[]string{"--providers", "", "--images", "3", dir}, 3, false, false, false},
		{[]string{"--providers", ""}, 64, true, false, false},
	}
	for i, c := range cases {
		args := append(append([]string{"doctor", "--model", model}, fast...), c.args...)
		stdout, stderr, err := runCommand(t, nil, args...)
		var r infer.ProviderReport
		if jerr := json.Unmarshal([]byte(stdout), &r); jerr != nil {
			t.Fatalf("case %d: %v, stdout %q, stderr %q, error %v", i, jerr, stdout, stderr, err)
		}
		if r.Images != c.images || r.Synthetic != c.synthetic || r.Runtime == "" || r.Library == "" || len(r.Libraries) != 3 {
			t.Errorf("case %d: report %+v", i, r)
		}
		cpu := r.Providers[0]
		if cpu.Provider != infer.ProviderCPU || cpu.Error != "" || !(cpu.P50Batch1 > 0) || !(cpu.P99Batch1 >= cpu.P50Batch1) ||
			!(cpu.Throughput > 0) || cpu.Batch != 16 || cpu.SameTop1 != c.images {
			t.Errorf("case %d: cpu %+v", i, cpu)
		}
		if !c.cudaRuns {
			if len(r.Providers) != 1 || err != nil {
				t.Errorf("case %d: providers %+v, error %v, want the cpu alone and success", i, r.Providers, err)
			}
			continue
		}
		cuda := r.Providers[1]
		switch {
		case cuda.Error != "":
			if !strings.Contains(cuda.Error, "cuda: ") || !strings.Contains(cuda.Error, "make setup-gpu") {
				t.Errorf("case %d: cuda error %q, want the reason and the fix", i, cuda.Error)
			}
			if c.require != (err != nil) {
				t.Errorf("case %d: error %v with cuda unavailable, require %v", i, err, c.require)
			}
		default:
			if cuda.MaxRelDiff == nil || *cuda.MaxRelDiff > 1e-4 || cuda.SameTop1 != c.images || err != nil {
				t.Errorf("case %d: cuda %+v, error %v", i, cuda, err)
			}
		}
	}
	if _, _, err := runCommand(t, nil, "doctor", "--model", model, "--providers", "gpu"); err == nil || !strings.Contains(err.Error(), `"gpu"`) {
		t.Errorf("--providers gpu: %v", err)
	}
}
