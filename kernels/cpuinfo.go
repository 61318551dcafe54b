package kernels

import (
	"bufio"
	"os"
	"strings"
)

// CPUInfo is the path of the Linux kernel's processor description.
const CPUInfo = "/proc/cpuinfo"

// ProcessorName returns the first processor model named in a cpuinfo file (CPUInfo on Linux): the
// "model name" field on x86, "Model", "Processor" or "cpu model" elsewhere; "unknown" when the file or the
// field is missing.
func ProcessorName(cpuinfo string) string {
	name, _ := readCPUInfo(cpuinfo)
	if name == "" {
		return "unknown"
	}
	return name
}

// cpuModel returns the processor's model name with the CPUID family and model numbers,
// "Intel(R) Xeon(R) Processor (family 6, model 207)": OpenBLAS picks its kernels by those numbers, so they
// say why it fell back.
func cpuModel() string {
	name, id := readCPUInfo(CPUInfo)
	if name == "" {
		name = "unknown"
	}
	if id != "" {
		name += " (" + id + ")"
	}
	return name
}

// readCPUInfo returns the first model name a cpuinfo file gives (see ProcessorName) and, on x86, the first
// processor's "family F, model M"; empty strings where the file or the fields are missing.
func readCPUInfo(path string) (name, id string) {
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	var fallback, family, model string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "model name":
			if name == "" {
				name = val
			}
		case "Model", "Processor", "cpu model":
			if fallback == "" {
				fallback = val
			}
		case "cpu family":
			if family == "" {
				family = val
			}
		case "model":
			if model == "" {
				model = val
			}
		}
	}
	if name == "" {
		name = fallback
	}
	if family != "" && model != "" {
		id = "family " + family + ", model " + model
	}
	return name, id
}
