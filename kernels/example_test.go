package kernels_test

import (
	"fmt"

	"github.com/bicyc/bicyc/kernels"
)

// A current Xeon with AVX-512 that Debian's OpenBLAS 0.3.21 does not know: OpenBLAS falls back to its
// Prescott kernels, and Choose asks for the SkylakeX set.
func ExampleChoose() {
	xeon := kernels.Features{Vendor: "GenuineIntel", SSE3: true, SSSE3: true, SSE41: true, SSE42: true,
		AVX: true, AVX2: true, FMA: true,
		AVX512F: true, AVX512CD: true, AVX512BW: true, AVX512DQ: true, AVX512VL: true}
	fmt.Println(kernels.Choose(xeon, "Prescott").CoreType)
	fmt.Printf("%q\n", kernels.Choose(xeon, "SkylakeX").CoreType)
	// Output:
	// SkylakeX
	// ""
}

// Ensure goes first in main: it may restart the program once, before any side effect.
func ExampleEnsure() {
	if _, err := kernels.Ensure(); err != nil {
		fmt.Println("warning:", err)
	}
	// ... the program, on the kernels the processor allows.
}
