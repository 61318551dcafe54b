package kernels

import (
	"strings"
	"testing"
)

// Processor feature sets of the machines users run, by the instructions OpenBLAS's kernel sets need.
var (
	sse3Only   = Features{Vendor: "GenuineIntel", SSE3: true}
	nehalem    = Features{Vendor: "GenuineIntel", SSE3: true, SSSE3: true, SSE41: true, SSE42: true}
	sandy      = Features{Vendor: "GenuineIntel", SSE3: true, SSSE3: true, SSE41: true, SSE42: true, AVX: true}
	haswell    = Features{Vendor: "GenuineIntel", SSE3: true, SSSE3: true, SSE41: true, SSE42: true, AVX: true, AVX2: true, FMA: true}
	zen3       = Features{Vendor: "AuthenticAMD", SSE3: true, SSSE3: true, SSE41: true, SSE42: true, AVX: true, AVX2: true, FMA: true}
	hygon      = Features{Vendor: "HygonGenuine", SSE3: true, SSSE3: true, SSE41: true, SSE42: true, AVX: true, AVX2: true, FMA: true}
	skylakeX   = Features{Vendor: "GenuineIntel", SSE3: true, SSSE3: true, SSE41: true, SSE42: true, AVX: true, AVX2: true, FMA: true, AVX512F: true, AVX512CD: true, AVX512BW: true, AVX512DQ: true, AVX512VL: true}
	cooperlake = Features{Vendor: "GenuineIntel", SSE3: true, SSSE3: true, SSE41: true, SSE42: true, AVX: true, AVX2: true, FMA: true, AVX512F: true, AVX512CD: true, AVX512BW: true, AVX512DQ: true, AVX512VL: true, AVX512BF16: true}
	zen4       = Features{Vendor: "AuthenticAMD", SSE3: true, SSSE3: true, SSE41: true, SSE42: true, AVX: true, AVX2: true, FMA: true, AVX512F: true, AVX512CD: true, AVX512BW: true, AVX512DQ: true, AVX512VL: true, AVX512BF16: true}
	// Knights Landing has AVX-512 F and CD but not BW, DQ or VL, which the SkylakeX kernels use.
	knl = Features{Vendor: "GenuineIntel", SSE3: true, SSSE3: true, SSE41: true, SSE42: true, AVX: true, AVX2: true, FMA: true, AVX512F: true, AVX512CD: true}
)

func TestChoose(t *testing.T) {
	for i, c := range []struct {
		name     string
		f        Features
		reported string
		want     string // "" keeps OpenBLAS's choice
	}{
		// The case: a current Xeon (AVX-512, AMX) whose model Debian's OpenBLAS 0.3.21 does not know.
		{"AVX-512 Xeon, Prescott reported", skylakeX, "Prescott", "SkylakeX"},
		{"AVX-512 Xeon, SkylakeX reported", skylakeX, "SkylakeX", ""},
		{"AVX-512 Xeon, Haswell reported", skylakeX, "Haswell", "SkylakeX"},
		{"AVX-512 Xeon, user-visible name in other case", skylakeX, "skylakex", ""},
		{"bf16 Xeon, Prescott reported", cooperlake, "Prescott", "Cooperlake"},
		{"bf16 Xeon, SkylakeX reported", cooperlake, "SkylakeX", ""},
		{"bf16 Xeon, SapphireRapids reported", cooperlake, "SapphireRapids", ""},
		{"Zen 4 (AVX-512), Zen reported", zen4, "Zen", "Cooperlake"},
		{"Zen 3, Zen reported", zen3, "Zen", ""},
		{"Zen 3, Prescott reported", zen3, "Prescott", "Zen"},
		{"Zen 3, Haswell reported", zen3, "Haswell", ""},
		{"Hygon, Prescott reported", hygon, "Prescott", "Zen"},
		{"Haswell, Haswell reported", haswell, "Haswell", ""},
		{"Haswell, Sandybridge reported", haswell, "Sandybridge", "Haswell"},
		{"Haswell, Nehalem reported", haswell, "Nehalem", "Haswell"},
		{"Knights Landing, Haswell reported", knl, "Haswell", ""},
		{"Knights Landing, Prescott reported", knl, "Prescott", "Haswell"},
		{"Sandy Bridge, Sandybridge reported", sandy, "Sandybridge", ""},
		{"Sandy Bridge, Prescott reported", sandy, "Prescott", "Sandybridge"},
		{"Nehalem, Core2 reported", nehalem, "Core2", "Nehalem"},
		{"SSE3 only, Prescott reported", sse3Only, "Prescott", ""},
		{"unknown core name", skylakeX, "FutureLake", "SkylakeX"},
		{"not OpenBLAS", skylakeX, "", ""},
		{"no SSE3", Features{Vendor: "GenuineIntel"}, "Prescott", ""},
	} {
		got := Choose(c.f, c.reported)
		if got.CoreType != c.want {
			t.Errorf("%d %s: Choose(%s, %q) = %q (%s), want %q", i, c.name, c.f, c.reported, got.CoreType, got.Reason, c.want)
		}
		if got.Reason == "" {
			t.Errorf("%d %s: no reason", i, c.name)
		}
	}
}

// TestBestIsKnown checks that every core type Best asks for is one the level table knows at its level, so
// that a process re-executed with it is not re-executed again.
func TestBestIsKnown(t *testing.T) {
	for i, f := range []Features{sse3Only, nehalem, sandy, haswell, zen3, hygon, skylakeX, cooperlake, zen4, knl} {
		ct, level := Best(f)
		if got, ok := coreLevels[strings.ToLower(ct)]; !ok || got != level {
			t.Errorf("%d: Best(%s) = %s at level %d; table: %d, %v", i, f, ct, level, got, ok)
		}
		if c := Choose(f, ct); c.CoreType != "" {
			t.Errorf("%d: Choose(%s, %s) asks again for %s", i, f, ct, c.CoreType)
		}
	}
}
