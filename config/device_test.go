package config

import (
	"strings"
	"testing"
)

// TestValidateDevice: train.device accepts auto, cpu and cuda, defaults to auto, and names the key otherwise.
func TestValidateDevice(t *testing.T) {
	if d := Default().Train.Device; d != DeviceAuto {
		t.Errorf("default train.device %q, want auto", d)
	}
	for i, tc := range []struct {
		device string
		ok     bool
	}{{"auto", true}, {"cpu", true}, {"cuda", true}, {"", false}, {"gpu", false}, {"CUDA", false}} {
		c := Default()
		c.Train.Device = tc.device
		err := c.Validate()
		if tc.ok != (err == nil) {
			t.Errorf("case %d %q: error %v", i, tc.device, err)
		}
		if err != nil && !strings.Contains(err.Error(), "train.device: \""+tc.device+"\" is not one of auto, cpu, cuda") {
			t.Errorf("case %d %q: error %v does not name the key and the values", i, tc.device, err)
		}
	}
}

// TestExperimentDiffIgnoresDevice: the device that trains a run does not change its experiment (a sweep's
// run trained elsewhere is still the same run), as threads do not.
func TestExperimentDiffIgnoresDevice(t *testing.T) {
	a, b := Default(), Default()
	b.Train.Device = DeviceCPU
	if d := ExperimentDiff(a, b); len(d) != 0 {
		t.Errorf("ExperimentDiff = %v, want none", d)
	}
	if d := Diff(a, b); len(d) != 1 || d[0].Key != "train.device" {
		t.Errorf("Diff = %v, want train.device alone", d)
	}
}
