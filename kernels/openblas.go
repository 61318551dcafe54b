package kernels

// #cgo LDFLAGS: -lopenblas
// char* openblas_get_corename(void);
// char* openblas_get_config(void);
import "C"

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/cpu"
)

// Environment variables: coreTypeEnv is OpenBLAS's own; choiceEnv records, for the re-executed process and
// its children, what OpenBLAS picked on its own and what Ensure asked for ("Prescott>SkylakeX"), so a
// user's OPENBLAS_CORETYPE is told apart from Ensure's and a process is re-executed at most once.
const (
	coreTypeEnv = "OPENBLAS_CORETYPE"
	choiceEnv   = "BICYC_OPENBLAS_CHOICE"
)

// Detect returns the features of the processor this process runs on.
func Detect() Features {
	x := cpu.X86
	return Features{
		Vendor: cpuVendor(),
		SSE3:   x.HasSSE3, SSSE3: x.HasSSSE3, SSE41: x.HasSSE41, SSE42: x.HasSSE42,
		AVX: x.HasAVX, AVX2: x.HasAVX2, FMA: x.HasFMA,
		AVX512F: x.HasAVX512F, AVX512CD: x.HasAVX512CD, AVX512BW: x.HasAVX512BW, AVX512DQ: x.HasAVX512DQ,
		AVX512VL: x.HasAVX512VL, AVX512BF16: x.HasAVX512BF16,
	}
}

// Source says who chose the kernels that run.
type Source string

const (
	// SourceOpenBLAS: OpenBLAS's own choice, as wide as the processor allows.
	SourceOpenBLAS Source = "openblas"
	// SourceBicyc: Ensure re-executed the process with OPENBLAS_CORETYPE.
	SourceBicyc Source = "bicyc"
	// SourceUser: the user's OPENBLAS_CORETYPE.
	SourceUser Source = "user"
)

// Status is what runs: the library, its kernels, who chose them and why.
type Status struct {
	// Library is OpenBLAS's build description (openblas_get_config), e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH ...".
	Library string `json:"library"`
	// Kernels is the kernel set in use (openblas_get_corename), e.g. "SkylakeX".
	Kernels string `json:"kernels"`
	// Picked is the kernel set OpenBLAS picked on its own, when Ensure replaced it; empty otherwise.
	Picked string `json:"openblas_picked,omitempty"`
	// Best is the widest kernel set the processor can run (Best).
	Best   string `json:"best_for_cpu"`
	Source Source `json:"chosen_by"`
	// Reason says why these kernels run.
	Reason string `json:"reason"`
	// CPUModel is the processor's model name and CPUID family and model, where the system tells them.
	CPUModel string   `json:"cpu_model,omitempty"`
	Features Features `json:"cpu_features"`
	// CPUFeatures is Features in words.
	CPUFeatures string `json:"cpu"`
}

// String is one line for logs: "OpenBLAS 0.3.21, kernels SkylakeX (chosen by bicyc: ...)".
func (s Status) String() string {
	lib := s.Library
	if f := strings.Fields(lib); len(f) >= 2 {
		lib = f[0] + " " + f[1]
	}
	return fmt.Sprintf("%s, kernels %s (chosen by %s: %s)", lib, s.Kernels, s.Source, s.Reason)
}

// Current returns what runs now, without changing anything.
func Current() Status {
	f := Detect()
	best, bestLevel := Best(f)
	s := Status{
		Library:     strings.TrimSpace(C.GoString(C.openblas_get_config())),
		Kernels:     C.GoString(C.openblas_get_corename()),
		Best:        best,
		CPUModel:    cpuModel(),
		Features:    f,
		CPUFeatures: f.String(),
	}
	user, userSet := os.LookupEnv(coreTypeEnv)
	picked, asked, ours := strings.Cut(os.Getenv(choiceEnv), ">")
	switch {
	case userSet && ours && strings.EqualFold(user, asked):
		s.Source, s.Picked = SourceBicyc, picked
		s.Reason = fmt.Sprintf("OpenBLAS picked %s, narrower than this processor (%s) runs; bicyc restarted with %s=%s", picked, s.CPUFeatures, coreTypeEnv, asked)
		if coreLevels[strings.ToLower(s.Kernels)] < bestLevel {
			s.Reason += fmt.Sprintf(", but OpenBLAS loaded %s", s.Kernels)
		}
	case userSet:
		s.Source = SourceUser
		s.Reason = fmt.Sprintf("%s=%s is set; the processor (%s) runs %s", coreTypeEnv, user, s.CPUFeatures, best)
	default:
		s.Source = SourceOpenBLAS
		s.Reason = Choose(f, s.Kernels).Reason
	}
	return s
}

// Ensure makes this process run the kernels Choose asks for. When OpenBLAS picked narrower kernels than the
// processor runs and OPENBLAS_CORETYPE is not set, it sets OPENBLAS_CORETYPE and re-executes the program
// (/proc/self/exe, same arguments and environment): on success it does not return. Otherwise it returns what
// runs. The error says why a needed re-execution failed; the process then goes on with the kernels it has.
//
// Call it first in main or TestMain, before the program has side effects: the re-executed process starts
// over. The environment it sets is inherited by child processes, which then keep the choice without
// re-executing.
func Ensure() (Status, error) {
	s := Current()
	if s.Source != SourceOpenBLAS {
		return s, nil
	}
	choice := Choose(s.Features, s.Kernels)
	if choice.CoreType == "" {
		return s, nil
	}
	// A stale choice (its OPENBLAS_CORETYPE removed by a caller) would shadow the new one: getenv reads the first.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, choiceEnv+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, coreTypeEnv+"="+choice.CoreType, choiceEnv+"="+s.Kernels+">"+choice.CoreType)
	err := syscall.Exec("/proc/self/exe", os.Args, env)
	return s, fmt.Errorf("kernels: re-executing with %s=%s: %w (running with OpenBLAS's %s kernels)", coreTypeEnv, choice.CoreType, err, s.Kernels)
}

// RunTests runs a test binary's tests on the kernels Ensure chooses, as the training binaries run, and
// exits with their code: `func TestMain(m *testing.M) { kernels.RunTests(m) }`. A failed restart is
// reported and the tests run on the kernels there are.
func RunTests(m interface{ Run() int }) {
	if _, err := Ensure(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(m.Run())
}
