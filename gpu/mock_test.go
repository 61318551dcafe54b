package gpu

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/gpu/internal/cudamock"
)

// mockChildEnv marks the child process of TestCheckOnMock.
const mockChildEnv = "BICYC_GPU_MOCK_CHILD"

// TestCheckOnMock runs the device check with the CPU stand-in for the CUDA libraries (package
// gpu/internal/cudamock) in a child process (cuda.Open loads once per process): every GPU op must then match
// the CPU op to 1e-4, which checks the ops' wiring — which device buffer feeds which cuDNN, cuBLAS or kernel
// argument, the gradients' buffers, uploads shared by two gradient ops — but not CUDA itself.
func TestCheckOnMock(t *testing.T) {
	dir := t.TempDir()
	if err := cudamock.Install(dir); err != nil {
		t.Fatalf("building the CUDA stand-in needs C and C++ compilers (cc, c++): %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCheckOnMockChild$", "-test.v")
	cmd.Env = append(os.Environ(), mockChildEnv+"=1", "BICYC_CUDA_LIB_PATH="+dir)
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestCheckOnMockChild") {
		t.Error("the child did not run TestCheckOnMockChild")
	}
}

// TestCheckOnMockChild is TestCheckOnMock's child; run alone it has nothing to do.
func TestCheckOnMockChild(t *testing.T) {
	if os.Getenv(mockChildEnv) == "" {
		t.Skip("run by TestCheckOnMock")
	}
	cases := []CheckCase{
		{Name: "conv3x3", X: []int{3, 4, 9, 9}, W: []int{5, 4, 3, 3}, Stride: 1, Pad: 1},
		{Name: "conv5x5s2", X: []int{2, 3, 11, 11}, W: []int{4, 3, 5, 5}, Stride: 2, Pad: 2},
		{Name: "conv1x1", X: []int{2, 6, 4, 4}, W: []int{3, 6, 1, 1}, Stride: 1, Pad: 0},
		{Name: "matmul", A: []int{6, 40}, B: []int{40, 9}},
		{Name: "relu", X: []int{3, 5, 7, 11}, Func: "relu"},
		{Name: "gelu", X: []int{6, 40}, Func: "gelu"},
		{Name: "maxpool", X: []int{2, 3, 9, 9}, Pool: 3, Stride: 2, Pad: 1},
		{Name: "batchnorm", X: []int{4, 3, 5, 5}, Norm: true},
		{Name: "batchnorm-eval", X: []int{4, 3, 5, 5}, Norm: true, Eval: true},
		{Name: "batchnorm-eval-relu", X: []int{4, 3, 5, 5}, Norm: true, Eval: true, ReLU: true},
		{Name: "batchnorm-eval-2d", X: []int{6, 9}, Norm: true, Eval: true, ReLU: true},
		{Name: "bias4d", X: []int{3, 5, 7, 9}, Func: "bias"},
		{Name: "bias2d", X: []int{5, 300}, Func: "bias"},
		{Name: "crossentropy", X: []int{7, 10}, Func: "crossentropy"},
		{Name: "crossentropy-2class", X: []int{3, 2}, Func: "crossentropy"},
		{Name: "mse", X: []int{7, 10}, Func: "mse"},
		{Name: "mse-4d", X: []int{2, 3, 5, 7}, Func: "mse"},
		{Name: "avgpool", X: []int{3, 5, 7, 9}, Func: "avgpool"},
		{Name: "sgd", SGD: []int{1, 257, 10007, 7}},
	}
	rep := Check(CheckOptions{Cases: cases, Runs: 2, Seed: 3})
	b, _ := json.MarshalIndent(rep, "", " ")
	if !rep.OK || rep.Device == nil || rep.Device.Name != "mock GPU" {
		t.Fatalf("check on the stand-in failed:\n%s", b)
	}
	for i, c := range rep.Cases {
		t.Logf("case %d %s: largest relative difference %.3g, %v", i, c.Name, c.MaxRelDiff, c.Diffs)
		if c.W != nil && len(c.ConvAlgos) != 3 {
			t.Errorf("case %d %s: cuDNN algorithms %v not reported", i, c.Name, c.ConvAlgos)
		}
	}
}
