package config

import "slices"

// The values of train.device.
const (
	// DeviceAuto trains on CUDA when the whole training step has a GPU path and CUDA loads, else on the
	// CPU. Until the GPU step exists (so far some of its ops: packages gpu/internal/cudaops, gpu/internal/cudakernels) it
	// always trains on the CPU.
	DeviceAuto = "auto"
	// DeviceCPU trains on the CPU.
	DeviceCPU = "cpu"
	// DeviceCUDA trains on an NVIDIA GPU or fails before any work.
	DeviceCUDA = "cuda"
)

// Devices lists the values train.device accepts.
func Devices() []string { return []string{DeviceAuto, DeviceCPU, DeviceCUDA} }

func (c Config) validateDevice(bad problem) {
	if !slices.Contains(Devices(), c.Train.Device) {
		bad("train.device", "%q is not one of auto, cpu, cuda", c.Train.Device)
	}
}
