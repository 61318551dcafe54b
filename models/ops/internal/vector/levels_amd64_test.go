//go:build amd64 && !purego

package vector

import (
	"os"
	"runtime"
	"testing"

	"github.com/bicyc/bicyc/kernels"
)

// TestLevelMatchesProcessor checks the kernel set against package kernels' detection, which its own tests
// cross-check with /proc/cpuinfo: AVX-512 runs exactly where the processor has AVX-512 F and LevelEnv does
// not cap the set.
func TestLevelMatchesProcessor(t *testing.T) {
	if runtime.GOARCH != "amd64" || !HasAVX2 {
		t.Skip("no AVX2 kernels in this build or on this processor")
	}
	f := kernels.Detect()
	if HasAVX2 != (f.AVX2 && f.FMA) {
		t.Errorf("HasAVX2 %v, processor AVX2 %v FMA %v", HasAVX2, f.AVX2, f.FMA)
	}
	capped := os.Getenv(LevelEnv) == "avx2"
	if want := f.AVX512F && !capped; HasAVX512 != want {
		t.Errorf("HasAVX512 %v, want %v (processor AVX-512 F %v, %s=%q)", HasAVX512, want, f.AVX512F, LevelEnv, os.Getenv(LevelEnv))
	}
	t.Logf("AVX2 %v, AVX-512 %v (%s=%q)", HasAVX2, HasAVX512, LevelEnv, os.Getenv(LevelEnv))
}

func TestLevelEnvValues(t *testing.T) {
	for v, want := range map[string]bool{"": false, "avx512": false, "avx2": true} {
		if got := capAtAVX2(v); got != want {
			t.Errorf("capAtAVX2(%q) = %v, want %v", v, got, want)
		}
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("capAtAVX2(\"sse\") did not panic")
		} else {
			t.Log(r)
		}
	}()
	capAtAVX2("sse")
}
