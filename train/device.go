package train

import (
	"errors"
	"fmt"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/gpu"
)

// ErrDeviceUnavailable is wrapped by the error of a run whose train.device cannot train it.
var ErrDeviceUnavailable = errors.New("training device unavailable")

// probeGPU loads the CUDA libraries and names the device (gpu.Probe; a test replaces it).
var probeGPU = gpu.Probe

// trainingDevice returns the device that trains a run of cfg ("cpu") and a note for the run log on why, or
// an error wrapping ErrDeviceUnavailable for train.device cuda. The GPU path of the training step is being
// built (package gpu holds its ops, fenced until the step uses them): until it is whole, auto trains on the
// CPU without loading CUDA, so a CPU run stays exactly what it was, and cuda is refused. It loads CUDA first,
// so that a machine without it hears which library or function is missing and where it was looked for.
func trainingDevice(cfg config.Config) (device, note string, err error) {
	switch cfg.Train.Device {
	case config.DeviceCPU:
		return "cpu", "train.device cpu", nil
	case config.DeviceCUDA:
		name, err := probeGPU()
		if err != nil {
			return "", "", fmt.Errorf("train.device cuda: %w; set train.device to cpu or auto: %w", err, ErrDeviceUnavailable)
		}
		return "", "", fmt.Errorf("train.device cuda: CUDA loads (%s), but the training step has no whole GPU path yet "+
			"(docs/gpu.md, Training on an NVIDIA GPU); set train.device to cpu or auto: %w", name, ErrDeviceUnavailable)
	}
	return "cpu", "train.device auto: the training step has no GPU path yet", nil
}
