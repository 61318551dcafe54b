package train

import (
	"errors"
	"fmt"

	"github.com/bicyc/bicyc/config"
)

// ErrDeviceUnavailable is wrapped by the error of a run whose train.device cannot train it.
var ErrDeviceUnavailable = errors.New("training device unavailable")

// trainingDevice returns the device that trains a run of cfg ("cpu") and a note for the run log on why, or
// an error wrapping ErrDeviceUnavailable for train.device cuda. The GPU path of the training step is being
// built (package models/cudaops holds its first ops): until it is whole, auto trains on the CPU without
// loading CUDA, so a CPU run stays exactly what it was.
func trainingDevice(cfg config.Config) (device, note string, err error) {
	switch cfg.Train.Device {
	case config.DeviceCPU:
		return "cpu", "train.device cpu", nil
	case config.DeviceCUDA:
		return "", "", fmt.Errorf("train.device cuda: the training step has no GPU path yet (only its convolution and matrix-product ops: docs/gpu.md, Training on an NVIDIA GPU); set train.device to cpu or auto: %w", ErrDeviceUnavailable)
	}
	return "cpu", "train.device auto: the training step has no GPU path yet", nil
}
