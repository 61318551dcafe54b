package report

import (
	"fmt"
	"runtime"

	"github.com/bicyc/bicyc/kernels"
)

// Machine describes the computer a report was made on.
type Machine struct {
	// NProc is the number of CPUs the process may use, as nproc counts them.
	NProc int `json:"nproc"`
	// CPU is the processor model from /proc/cpuinfo, "unknown" where that
	// file or its model field is missing.
	CPU string `json:"cpu"`
	// OS and Arch are the Go platform, e.g. linux and amd64.
	OS   string `json:"os"`
	Arch string `json:"arch"`
	// GoVersion is the Go release the binary was built with.
	GoVersion string `json:"go_version"`
}

// String is the machine as reports name it, e.g. "AMD EPYC 7B13 (2 CPUs,
// linux/amd64, go1.26.8)".
func (m Machine) String() string {
	return fmt.Sprintf("%s (%d CPUs, %s/%s, %s)", m.CPU, m.NProc, m.OS, m.Arch, m.GoVersion)
}

// ThisMachine describes the computer the program runs on.
func ThisMachine() Machine {
	return Machine{
		NProc:     runtime.NumCPU(),
		CPU:       kernels.ProcessorName(kernels.CPUInfo),
		OS:        runtime.GOOS,
		Arch:      runtime.GOARCH,
		GoVersion: runtime.Version(),
	}
}
