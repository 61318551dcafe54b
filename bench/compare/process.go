package compare

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNoRusage is returned by RunTimed on a system whose processes report
// no Linux resource usage.
var ErrNoRusage = errors.New("no resource usage for the child process")

// ProcessRun is one timed run of a whole process.
type ProcessRun struct {
	// Wall is the time from starting the process to its exit.
	Wall time.Duration
	// PeakRSS is the child's peak resident set size in bytes (getrusage
	// ru_maxrss, which Linux reports in KiB).
	PeakRSS int64
}

// RunTimed runs the program with args to completion, its output discarded,
// and returns its wall time and peak resident memory. A non-zero exit is an
// error that quotes the end of the program's standard error.
func RunTimed(program string, args ...string) (ProcessRun, error) {
	cmd := exec.Command(program, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		tail := stderr.String()
		if len(tail) > 1000 {
			tail = "..." + tail[len(tail)-1000:]
		}
		return ProcessRun{}, fmt.Errorf("%s %s: %w; stderr: %s", program, strings.Join(args, " "), err, tail)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return ProcessRun{}, fmt.Errorf("%s: %w", program, ErrNoRusage)
	}
	return ProcessRun{Wall: wall, PeakRSS: ru.Maxrss << 10}, nil
}

// PeakRSS returns this process's peak resident set size in bytes since it
// started or since the last ResetPeakRSS (VmHWM of /proc/self/status).
func PeakRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc/self/status: VmHWM line %q, want a value in kB", strings.TrimSpace(line))
		}
		kib, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/self/status: VmHWM %q: %w", f[0], err)
		}
		return kib << 10, nil
	}
	return 0, fmt.Errorf("/proc/self/status has no VmHWM line")
}

// ResetPeakRSS resets this process's peak resident set size to its current
// resident set size (Linux >= 4.0: "5" written to /proc/self/clear_refs),
// so that PeakRSS measures one phase of a benchmark. getrusage's ru_maxrss
// is not reset.
func ResetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// LoadAverage returns the 1, 5 and 15 minute load averages as
// /proc/loadavg prints them, e.g. "5.06 5.72 5.42".
func LoadAverage() (string, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "", err
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "", fmt.Errorf("/proc/loadavg: %q has fewer than 3 fields", b)
	}
	return strings.Join(f[:3], " "), nil
}

// MiB converts bytes to mebibytes for printing.
func MiB(bytes int64) float64 { return float64(bytes) / (1 << 20) }
