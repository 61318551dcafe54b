package gpu

import "github.com/bicyc/bicyc/gpu/internal/cuda"

// Probe loads the CUDA libraries (once per process) and returns the name of the device the GPU ops would
// run on, or the loader's error, which names each library or function that is missing and where it was
// looked for, wrapping ErrUnavailable.
func Probe() (device string, err error) {
	r, err := cuda.Open()
	if err != nil {
		return "", err
	}
	return r.Device.Name, nil
}

// ErrUnavailable is wrapped by Probe's error when the CUDA libraries cannot be loaded.
var ErrUnavailable = cuda.ErrUnavailable
