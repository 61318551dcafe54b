package train

import (
	"errors"
	"os"
	"testing"

	"github.com/bicyc/bicyc/config"
)

// TestTrainingDevice: auto and cpu train on the CPU, and cuda is refused, naming the setting, until the
// training step has a GPU path.
func TestTrainingDevice(t *testing.T) {
	for i, tc := range []struct {
		setting, device string
		err             bool
	}{{config.DeviceAuto, "cpu", false}, {config.DeviceCPU, "cpu", false}, {config.DeviceCUDA, "", true}} {
		cfg := config.Default()
		cfg.Train.Device = tc.setting
		device, note, err := trainingDevice(cfg)
		if device != tc.device || (err != nil) != tc.err || (err == nil && note == "") {
			t.Errorf("case %d %s: device %q, note %q, error %v", i, tc.setting, device, note, err)
		}
		if err != nil && !errors.Is(err, ErrDeviceUnavailable) {
			t.Errorf("case %d: error %v does not wrap ErrDeviceUnavailable", i, err)
		}
	}
}

// TestNewRefusesCUDA: a run asking for cuda fails before it writes or loads anything.
func TestNewRefusesCUDA(t *testing.T) {
	cfg := config.Default()
	cfg.Train.Device = config.DeviceCUDA
	dir := t.TempDir() + "/run"
	_, err := New(cfg, dir, Options{})
	if !errors.Is(err, ErrDeviceUnavailable) {
		t.Fatalf("New with train.device cuda: %v", err)
	}
	if _, statErr := os.Stat(dir); !os.IsNotExist(statErr) {
		t.Errorf("the refused run left %s behind (%v)", dir, statErr)
	}
}
