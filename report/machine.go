package report

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
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
		CPU:       cpuModel("/proc/cpuinfo"),
		OS:        runtime.GOOS,
		Arch:      runtime.GOARCH,
		GoVersion: runtime.Version(),
	}
}

// cpuModel returns the first processor model named in a cpuinfo file: the
// "model name" field on x86, "Model" or "Processor" elsewhere.
func cpuModel(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	fallback := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "model name":
			if val != "" {
				return val
			}
		case "Model", "Processor", "cpu model":
			if fallback == "" {
				fallback = val
			}
		}
	}
	if fallback != "" {
		return fallback
	}
	return "unknown"
}
