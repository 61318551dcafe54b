package kernels

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDetectMatchesProcCPUInfo cross-checks Detect, which reads CPUID through golang.org/x/sys/cpu, against
// the flags the Linux kernel reports: a library's CPU detection is not trusted unchecked.
func TestDetectMatchesProcCPUInfo(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("the x86 features are checked on amd64; this is %s", runtime.GOARCH)
	}
	info := cpuInfoFields(CPUInfo)
	flags := map[string]bool{}
	for _, fl := range strings.Fields(info["flags"]) {
		flags[fl] = true
	}
	vendor := info["vendor_id"]
	if len(flags) == 0 {
		t.Fatal("/proc/cpuinfo has no flags line")
	}
	d := Detect()
	if d.Vendor != vendor {
		t.Errorf("vendor %q, /proc/cpuinfo says %q", d.Vendor, vendor)
	}
	for _, c := range []struct {
		flag string
		got  bool
	}{
		{"pni", d.SSE3}, {"ssse3", d.SSSE3}, {"sse4_1", d.SSE41}, {"sse4_2", d.SSE42},
		{"avx", d.AVX}, {"avx2", d.AVX2}, {"fma", d.FMA},
		{"avx512f", d.AVX512F}, {"avx512cd", d.AVX512CD}, {"avx512bw", d.AVX512BW}, {"avx512dq", d.AVX512DQ},
		{"avx512vl", d.AVX512VL}, {"avx512_bf16", d.AVX512BF16},
	} {
		if c.got != flags[c.flag] {
			t.Errorf("%s: Detect says %v, /proc/cpuinfo says %v", c.flag, c.got, flags[c.flag])
		}
	}
}

// TestEnsureRunsBestKernels checks the test binary itself, which TestMain passed through Ensure: OpenBLAS
// runs the widest kernels the processor allows, or the user's OPENBLAS_CORETYPE.
func TestEnsureRunsBestKernels(t *testing.T) {
	s := Current()
	t.Logf("%s", s)
	if s.Library == "" || s.Kernels == "" {
		t.Fatalf("OpenBLAS reports no build or core: %+v", s)
	}
	if user, ok := os.LookupEnv(coreTypeEnv); ok && s.Source == SourceUser {
		// OpenBLAS loads a set of the same level under another name (Cooperlake without bf16 as SkylakeX).
		if want, known := coreLevels[strings.ToLower(user)]; known && coreLevels[strings.ToLower(s.Kernels)] != want {
			t.Errorf("%s=%s, OpenBLAS runs %s", coreTypeEnv, user, s.Kernels)
		}
		return
	}
	_, best := Best(s.Features)
	if got := coreLevels[strings.ToLower(s.Kernels)]; got < best {
		t.Errorf("OpenBLAS runs %s (level %d), the processor (%s) runs %s (level %d)", s.Kernels, got, s.CPUFeatures, s.Best, best)
	}
}

func TestProcessorName(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cpuinfo")
	for i, c := range []struct{ cpuinfo, name, id string }{
		{"processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC 7B13\n", "AMD EPYC 7B13", "family 25, model 1"},
		{"processor\t: 0\nBogoMIPS\t: 48.00\n\nprocessor\t: 1\n\nModel\t: Raspberry Pi 4 Model B Rev 1.4\n", "Raspberry Pi 4 Model B Rev 1.4", ""},
		{"processor\t: 0\n", "unknown", ""},
	} {
		if err := os.WriteFile(path, []byte(c.cpuinfo), 0o644); err != nil {
			t.Fatal(err)
		}
		_, id := readCPUInfo(path)
		if got := ProcessorName(path); got != c.name || id != c.id {
			t.Errorf("case %d: %q, %q, want %q, %q", i, got, id, c.name, c.id)
		}
	}
	if got := ProcessorName(filepath.Join(dir, "missing")); got != "unknown" {
		t.Errorf("missing cpuinfo: %q, want unknown", got)
	}
}
