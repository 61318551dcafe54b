package main

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// runInfo records how and where the results were measured, so the
// published tables state it.
type runInfo struct {
	Args        []string  `json:"args"` // the command's arguments
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished"`
	WallSeconds float64   `json:"wall_seconds"`
	Machine     string    `json:"machine"`    // OS/arch, CPU model and count
	LoadStart   string    `json:"load_start"` // /proc/loadavg (1, 5, 15 min) at start
	LoadEnd     string    `json:"load_end"`
}

// startRun records the start of a run with arguments args, less --work:
// where the intermediate files go changes no result, and the published
// command should not name a path of the machine that ran it.
func startRun(args []string) runInfo {
	var kept []string
	for i := 0; i < len(args); i++ {
		switch a := strings.TrimLeft(args[i], "-"); {
		case a == "work" && strings.HasPrefix(args[i], "-"):
			i++ // and its value
		case strings.HasPrefix(a, "work=") && strings.HasPrefix(args[i], "-"):
		default:
			kept = append(kept, args[i])
		}
	}
	return runInfo{Args: kept, Started: time.Now().UTC(), Machine: machine(), LoadStart: loadAverage()}
}

// finish stamps the end of the run so far.
func (r *runInfo) finish() {
	r.Finished = time.Now().UTC()
	r.WallSeconds = r.Finished.Sub(r.Started).Seconds()
	r.LoadEnd = loadAverage()
}

// machine describes the host: OS, architecture, CPU model and logical CPUs.
func machine() string {
	model := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return runtime.GOOS + "/" + runtime.GOARCH + ", " + model + ", " + strconv.Itoa(runtime.NumCPU()) + " logical CPUs"
}

// loadAverage is the 1, 5 and 15 minute load averages, "" where unknown.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(raw)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return ""
}
