package compare

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// TimeProgram is GNU time (Debian package time), through which RunTimed
// runs a program to read its peak RSS.
const TimeProgram = "/usr/bin/time"

// ProcessRun is one timed run of a whole process.
type ProcessRun struct {
	// Wall is the time from starting the process to its exit, as this
	// process sees it (GNU time's own start-up, about a millisecond,
	// included).
	Wall time.Duration
	// CPU is the user plus system CPU time of the program and its children
	// (and of GNU time, well under a millisecond). Unlike Wall it hardly
	// depends on what else the machine runs.
	CPU time.Duration
	// PeakRSS is the program's peak resident set size in bytes (GNU time's
	// %M, ru_maxrss, in KiB).
	PeakRSS int64
}

// RunTimed runs the program with args to completion, its output discarded,
// and returns its wall time and peak resident memory. A non-zero exit is an
// error that quotes the end of the program's standard error.
//
// The program runs under GNU time rather than as a direct child because
// Go starts children with vfork semantics: the child shares this process's
// memory until it execs, and Linux carries that memory's high-water mark
// into the child's ru_maxrss, so a direct child would report at least this
// process's peak. GNU time forks the program from its own small process.
func RunTimed(program string, args ...string) (ProcessRun, error) {
	report, err := os.CreateTemp("", "bicyc-bench-time-")
	if err != nil {
		return ProcessRun{}, err
	}
	report.Close()
	defer os.Remove(report.Name())
	cmd := exec.Command(TimeProgram, append([]string{"-f", "%M", "-o", report.Name(), program}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	if err != nil {
		tail := stderr.String()
		if len(tail) > 1000 {
			tail = "..." + tail[len(tail)-1000:]
		}
		return ProcessRun{}, fmt.Errorf("%s %s: %w; stderr: %s", program, strings.Join(args, " "), err, tail)
	}
	b, err := os.ReadFile(report.Name())
	if err != nil {
		return ProcessRun{}, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ProcessRun{}, fmt.Errorf("%s wrote no peak RSS for %s", TimeProgram, program)
	}
	kib, err := strconv.ParseInt(f[len(f)-1], 10, 64)
	if err != nil {
		return ProcessRun{}, fmt.Errorf("%s: peak RSS of %s: %w", TimeProgram, program, err)
	}
	// GNU time has reaped the program, so its own resource usage includes
	// the program's CPU time, at microsecond resolution (its %U and %S
	// have only 10 ms).
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return ProcessRun{Wall: wall, CPU: cpu, PeakRSS: kib << 10}, nil
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

// CPUTime returns the user plus system CPU time this process has used, all
// threads together (getrusage RUSAGE_SELF).
func CPUTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
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

// MB converts bytes to megabytes (10^6 bytes, the unit of the issues'
// memory targets) for printing.
func MB(bytes int64) float64 { return float64(bytes) / 1e6 }
