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
	f := cpuInfoFields(path)
	name = f["model name"]
	for _, k := range []string{"Model", "Processor", "cpu model"} {
		if name == "" {
			name = f[k]
		}
	}
	if f["cpu family"] != "" && f["model"] != "" {
		id = "family " + f["cpu family"] + ", model " + f["model"]
	}
	return name, id
}

// cpuInfoFields returns the first value of each "key : value" line of a cpuinfo file (the first processor's,
// and the machine-wide lines ARM puts at the end); empty where the file cannot be read.
func cpuInfoFields(path string) map[string]string {
	fields := map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		return fields
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key = strings.TrimSpace(key)
		if _, seen := fields[key]; !seen {
			fields[key] = strings.TrimSpace(val)
		}
	}
	return fields
}
