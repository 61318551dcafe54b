package cuda_test

import (
	"errors"
	"fmt"

	"github.com/bicyc/bicyc/gpu/internal/cuda"
)

// Open loads the CUDA libraries once per process; without them the error says which are missing and where
// they were looked for, and wraps ErrUnavailable for callers that fall back to the CPU.
func ExampleOpen() {
	r, err := cuda.Open()
	if errors.Is(err, cuda.ErrUnavailable) {
		fmt.Println("training on the CPU:", err)
		return
	}
	fmt.Printf("%s (compute %s), cuDNN %d, from %v\n", r.Device.Name, r.Device.ComputeCapability, r.Device.CUDNNVersion, r.Libraries)
}
