package train

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/gpu"
)

// TestTrainingDevice: auto and cpu train on the CPU without loading CUDA; cuda is refused, naming the
// setting, with the loader's account of what is missing when CUDA does not load, and with the device's name
// when it does (the step has no whole GPU path yet).
func TestTrainingDevice(t *testing.T) {
	defer func(f func() (string, error)) { probeGPU = f }(probeGPU)
	missing := errors.New("cuda: cannot load cuBLAS (libcublas.so.13 from /x): lacks cublasSgemm_v2")
	for i, tc := range []struct {
		setting, device string
		open            func() (string, error)
		errHas          []string
	}{
		{setting: config.DeviceAuto, device: "cpu"},
		{setting: config.DeviceCPU, device: "cpu"},
		{setting: config.DeviceCUDA, open: func() (string, error) { return "", missing },
			errHas: []string{"train.device cuda: cuda: cannot load cuBLAS (libcublas.so.13 from /x): lacks cublasSgemm_v2", "set train.device to cpu or auto"}},
		{setting: config.DeviceCUDA, open: func() (string, error) { return "NVIDIA H100", nil },
			errHas: []string{"CUDA loads (NVIDIA H100), but the training step has no whole GPU path yet"}},
	} {
		loaded := false
		probeGPU = func() (string, error) {
			loaded = true
			if tc.open == nil {
				t.Errorf("case %d %s: CUDA loaded", i, tc.setting)
				return "", missing
			}
			return tc.open()
		}
		cfg := config.Default()
		cfg.Train.Device = tc.setting
		device, note, err := trainingDevice(cfg)
		if device != tc.device || (err != nil) != (tc.errHas != nil) || (err == nil && note == "") {
			t.Errorf("case %d %s: device %q, note %q, error %v", i, tc.setting, device, note, err)
		}
		if tc.open != nil && !loaded {
			t.Errorf("case %d: CUDA not loaded", i)
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrDeviceUnavailable) {
			t.Errorf("case %d: error %v does not wrap ErrDeviceUnavailable", i, err)
		}
		for _, want := range tc.errHas {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("case %d: error %q lacks %q", i, err, want)
			}
		}
	}
}

// TestNewRefusesCUDA: a run asking for cuda fails before it writes or loads anything; on a machine without
// CUDA the error names each library the loader could not find.
func TestNewRefusesCUDA(t *testing.T) {
	cfg := config.Default()
	cfg.Train.Device = config.DeviceCUDA
	dir := t.TempDir() + "/run"
	_, err := New(cfg, dir, Options{})
	if !errors.Is(err, ErrDeviceUnavailable) {
		t.Fatalf("New with train.device cuda: %v", err)
	}
	t.Log(err)
	if _, statErr := os.Stat(dir); !os.IsNotExist(statErr) {
		t.Errorf("the refused run left %s behind (%v)", dir, statErr)
	}
	if _, cudaErr := gpu.Probe(); cudaErr == nil {
		return // a GPU machine: TestTrainingDevice covers the message
	}
	if !errors.Is(err, gpu.ErrUnavailable) {
		t.Errorf("error %v does not wrap gpu.ErrUnavailable", err)
	}
	for _, lib := range []string{"libcudart.so.13", "libcublas.so.13", "libcudnn.so.9", "libnvrtc.so.13", "BICYC_CUDA_LIB_PATH"} {
		if !strings.Contains(err.Error(), lib) && !strings.Contains(err.Error(), "lacks") {
			t.Errorf("error %q names neither %s nor a missing function", err, lib)
		}
	}
}
