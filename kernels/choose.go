package kernels

import (
	"fmt"
	"strings"
)

// Features are the processor's capabilities that decide OpenBLAS's x86-64 kernel sets.
type Features struct {
	// Vendor is the CPUID vendor string ("GenuineIntel", "AuthenticAMD", "HygonGenuine", ...).
	Vendor                    string
	SSE3, SSSE3, SSE41, SSE42 bool
	// AVX, AVX2 and the AVX-512 flags are true only when the operating system also saves the registers.
	AVX, AVX2, FMA                                  bool
	AVX512F, AVX512CD, AVX512BW, AVX512DQ, AVX512VL bool
	AVX512BF16                                      bool
}

// String lists the vector features that decide the kernels, widest first: "avx512 avx2 fma avx sse4.2 ssse3 sse3".
func (f Features) String() string {
	var parts []string
	if f.hasAVX512() {
		s := "avx512"
		if f.AVX512BF16 {
			s += "+bf16"
		}
		parts = append(parts, s)
	} else if f.AVX512F {
		parts = append(parts, "avx512f (without cd/bw/dq/vl)")
	}
	for _, x := range []struct {
		on   bool
		name string
	}{{f.AVX2, "avx2"}, {f.FMA, "fma"}, {f.AVX, "avx"}, {f.SSE42, "sse4.2"}, {f.SSSE3, "ssse3"}, {f.SSE3, "sse3"}} {
		if x.on {
			parts = append(parts, x.name)
		}
	}
	if len(parts) == 0 {
		return "sse2"
	}
	return strings.Join(parts, " ")
}

// hasAVX512 reports whether the processor runs OpenBLAS's SkylakeX kernels, which use AVX-512 F, CD, BW, DQ
// and VL.
func (f Features) hasAVX512() bool {
	return f.AVX512F && f.AVX512CD && f.AVX512BW && f.AVX512DQ && f.AVX512VL
}

// Vector levels of OpenBLAS's x86-64 kernel sets: a set needs the instructions of its level.
const (
	levelUnknown = iota
	levelSSE3
	levelSSSE3
	levelSSE42
	levelAVX
	levelAVX2
	levelAVX512
)

// coreLevels maps the core names OpenBLAS 0.3.x reports (openblas_get_corename, lower-cased) to the vector
// level of their kernels (driver/others/dynamic.c's corename table).
var coreLevels = map[string]int{
	"katmai": levelUnknown, "coppermine": levelUnknown,
	"northwood": levelSSE3, "prescott": levelSSE3, "banias": levelSSE3, "athlon": levelSSE3,
	"opteron": levelSSE3, "opteron_sse3": levelSSE3,
	"atom": levelSSSE3, "core2": levelSSSE3, "penryn": levelSSSE3, "dunnington": levelSSSE3,
	"nano": levelSSSE3, "bobcat": levelSSSE3, "barcelona": levelSSSE3,
	"nehalem":     levelSSE42,
	"sandybridge": levelAVX, "bulldozer": levelAVX, "piledriver": levelAVX, "steamroller": levelAVX,
	"excavator": levelAVX,
	"haswell":   levelAVX2, "zen": levelAVX2,
	"skylakex": levelAVX512, "cooperlake": levelAVX512, "sapphirerapids": levelAVX512,
}

// Best returns the OpenBLAS core type (an OPENBLAS_CORETYPE value) with the widest kernels the processor can
// execute, and its vector level.
func Best(f Features) (coreType string, level int) {
	amd := f.Vendor == "AuthenticAMD" || f.Vendor == "HygonGenuine"
	switch {
	case f.hasAVX512() && f.AVX512BF16:
		return "Cooperlake", levelAVX512
	case f.hasAVX512():
		return "SkylakeX", levelAVX512
	case f.AVX2 && f.FMA && amd:
		return "Zen", levelAVX2
	case f.AVX2 && f.FMA:
		return "Haswell", levelAVX2
	case f.AVX:
		return "Sandybridge", levelAVX
	case f.SSE42:
		return "Nehalem", levelSSE42
	case f.SSSE3:
		return "Core2", levelSSSE3
	case f.SSE3:
		return "Prescott", levelSSE3
	}
	return "", levelUnknown
}

// Choice is the decision of Choose.
type Choice struct {
	// CoreType is the OPENBLAS_CORETYPE to load OpenBLAS with; empty to keep the kernels it picked.
	CoreType string
	// Reason says why, in a few words, for logs.
	Reason string
}

// Choose decides whether OpenBLAS, which reported the core name reported for a processor with features f,
// should be loaded again with other kernels. It asks for the processor's best kernel set (Best) when the
// reported set is of a lower vector level, or unknown to this table (a name that is not a core, a library
// that is not OpenBLAS: reported empty); it keeps what OpenBLAS picked when that is as wide as the processor
// allows, since OpenBLAS then also knows the model's cache sizes.
func Choose(f Features, reported string) Choice {
	best, bestLevel := Best(f)
	have, known := coreLevels[strings.ToLower(reported)]
	switch {
	case reported == "":
		return Choice{Reason: "no OpenBLAS core reported"}
	case best == "":
		return Choice{Reason: fmt.Sprintf("OpenBLAS picked %s; the processor reports no SSE3", reported)}
	case known && have >= bestLevel:
		return Choice{Reason: fmt.Sprintf("OpenBLAS picked %s, the widest kernels for this processor (%s)", reported, f)}
	case !known:
		return Choice{CoreType: best, Reason: fmt.Sprintf("OpenBLAS picked %s, a core this table does not know; the processor (%s) runs %s", reported, f, best)}
	}
	return Choice{CoreType: best, Reason: fmt.Sprintf("OpenBLAS picked %s, narrower than the processor (%s) runs: %s", reported, f, best)}
}
