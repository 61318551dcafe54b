package kernels

import (
	"bufio"
	"os"
	"strings"
)

// cpuModel returns the processor's model name and CPUID family/model numbers as /proc/cpuinfo gives them
// ("Intel(R) Xeon(R) Processor (family 6, model 207)"), or "" where there is no /proc/cpuinfo. OpenBLAS
// picks its kernels by these numbers, so they say why it fell back.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	fields := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" && len(fields) > 0 {
			break // the first processor is enough
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	name := fields["model name"]
	if name == "" {
		return ""
	}
	if fam, mod := fields["cpu family"], fields["model"]; fam != "" && mod != "" {
		name += " (family " + fam + ", model " + mod + ")"
	}
	return name
}
