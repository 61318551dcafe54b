package gpu

import (
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestCheck runs the device check on small layers. Without CUDA (the CI machines) the CPU side runs and the
// report says why the GPU could not; with CUDA every output and gradient must match the CPU's within 1e-4 of
// its largest magnitude.
func TestCheck(t *testing.T) {
	cases := []CheckCase{
		{Name: "conv3x3", X: []int{4, 8, 12, 12}, W: []int{16, 8, 3, 3}, Stride: 1, Pad: 1},
		{Name: "conv7x7s2", X: []int{2, 3, 20, 20}, W: []int{8, 3, 7, 7}, Stride: 2, Pad: 3},
		{Name: "matmul", A: []int{6, 40}, B: []int{40, 9}},
		{Name: "relu", X: []int{3, 5, 7, 11}, Func: "relu"},
		{Name: "gelu", X: []int{6, 40}, Func: "gelu"},
		{Name: "maxpool", X: []int{2, 3, 9, 9}, Pool: 3, Stride: 2, Pad: 1},
		{Name: "batchnorm", X: []int{4, 3, 5, 5}, Norm: true},
	}
	rep := Check(CheckOptions{Cases: cases, Runs: 1, Seed: 1})
	if len(rep.Cases) != len(cases) {
		t.Fatalf("%d case reports, want %d", len(rep.Cases), len(cases))
	}
	for i, c := range rep.Cases {
		if c.CPUMillis <= 0 || c.CPUImagesPerSec <= 0 || c.LossCPU == 0 {
			t.Errorf("case %d (%s): CPU not measured: %+v", i, c.Name, c)
		}
	}
	if rep.CUDAError != "" {
		t.Logf("no CUDA here: %s", rep.CUDAError)
		if rep.OK || rep.Device != nil || !strings.HasPrefix(rep.CUDAError, "cuda: ") {
			t.Errorf("report without CUDA: ok %v, device %v, error %q", rep.OK, rep.Device, rep.CUDAError)
		}
		for i, c := range rep.Cases {
			if c.Error != "gpu: not run (cuda unavailable)" || c.Diffs != nil {
				t.Errorf("case %d: error %q, diffs %v", i, c.Error, c.Diffs)
			}
		}
		return
	}
	t.Logf("device %+v", rep.Device)
	for i, c := range rep.Cases {
		t.Logf("case %d (%s): %+v", i, c.Name, c.Diffs)
		if c.Error != "" || !c.WithinTolerance {
			t.Errorf("case %d (%s): error %q, largest relative difference %.3g", i, c.Name, c.Error, c.MaxRelDiff)
		}
	}
}

// TestCompare: the check's comparison, shown on the CPU: a layer run twice on the same device differs by 0,
// and a tensor with one element changed differs by exactly that change relative to the largest magnitude.
func TestCompare(t *testing.T) {
	c := CheckCase{Name: "conv", X: []int{2, 4, 9, 9}, W: []int{6, 4, 3, 3}, Stride: 2, Pad: 1}
	x := tensor.New(tensor.WithShape(2, 4, 9, 9), tensor.WithBacking(make([]float32, 2*4*81)))
	w := tensor.New(tensor.WithShape(6, 4, 3, 3), tensor.WithBacking(make([]float32, 6*4*9)))
	for i := range x.Float32s() {
		x.Float32s()[i] = float32(i%7) - 3
	}
	for i := range w.Float32s() {
		w.Float32s()[i] = float32(i%5) - 2
	}
	var runs [2]*layerRun
	for i := range runs {
		r, err := buildLayer(c, []*tensor.Dense{x, w}, false)
		if err != nil {
			t.Fatal(err)
		}
		defer r.m.Close()
		if err := r.m.RunAll(); err != nil {
			t.Fatal(err)
		}
		runs[i] = r
	}
	for i, pair := range [][2]*G.Node{{runs[0].out, runs[1].out}, {runs[0].grads[0], runs[1].grads[0]}, {runs[0].grads[1], runs[1].grads[1]}} {
		if d := compare(pair[0].Value(), pair[1].Value()); d.MaxAbs != 0 || d.MaxRel != 0 {
			t.Errorf("tensor %d: same layer twice differs: %+v", i, d)
		}
	}
	a := tensor.New(tensor.WithBacking([]float32{1, -4, 2}))
	b := tensor.New(tensor.WithBacking([]float32{1, -4, 2.5}))
	if d := compare(a, b); d.MaxAbs != 0.5 || d.MaxRel != 0.125 {
		t.Errorf("compare: %+v, want abs 0.5, rel 0.125", d)
	}
}
