package compare

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPercentileMedian(t *testing.T) {
	cases := []struct {
		xs          []float64
		p, want     float64
		wantMedian  float64
		description string
	}{
		{[]float64{5}, 50, 5, 5, "one value"},
		{[]float64{4, 1, 3, 2}, 50, 2, 2.5, "even count, unsorted"},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99, 10, 5.5, "p99 of ten is the largest"},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90, 9, 5.5, "nearest rank"},
		{[]float64{3, 1, 2}, 0, 1, 2, "p0 is the smallest"},
	}
	for i, c := range cases {
		if got := Percentile(c.xs, c.p); got != c.want {
			t.Errorf("case %d (%s): Percentile(%v, %v) = %v, want %v", i, c.description, c.xs, c.p, got, c.want)
		}
		if got := Median(c.xs); got != c.wantMedian {
			t.Errorf("case %d (%s): Median(%v) = %v, want %v", i, c.description, c.xs, got, c.wantMedian)
		}
	}
	if !math.IsNaN(Median(nil)) || !math.IsNaN(Percentile(nil, 50)) {
		t.Error("median and percentile of nothing are not NaN")
	}
	xs := []float64{3, 1, 2}
	Median(xs)
	if xs[0] != 3 {
		t.Error("Median sorted its argument in place")
	}
}

func TestTable(t *testing.T) {
	tab := Table{Header: []string{"metric", "bicyc"}}
	tab.Add("p50 (us)", "120")
	tab.Add("throughput (img/s)", "9000", "extra")
	var b strings.Builder
	if err := tab.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"| metric             | bicyc |       |\n" +
		"| ------------------ | ----- | ----- |\n" +
		"| p50 (us)           | 120   |       |\n" +
		"| throughput (img/s) | 9000  | extra |\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestRunTimed(t *testing.T) {
	// Hold 200 MiB here: a child's reported peak must not include this
	// process's memory (see RunTimed).
	held := make([]byte, 200<<20)
	for i := 0; i < len(held); i += 4096 {
		held[i] = 1
	}
	cases := []struct {
		script       string
		least, below int64
	}{
		{"true", 0, 50 << 20},
		{"head -c 100000000 /dev/zero | tail -c 1 >/dev/null", 0, 50 << 20},
		{"exec " + Python() + " -c 'b = bytearray(120 << 20)'", 120 << 20, 190 << 20},
	}
	for i, c := range cases {
		run, err := RunTimed("/bin/sh", "-c", c.script)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if run.Wall <= 0 || run.CPU <= 0 || run.PeakRSS <= c.least || run.PeakRSS >= c.below {
			t.Errorf("case %d (%s): wall %v, CPU %v, peak RSS %.1f MB, want it in (%.1f, %.1f) MB", i, c.script, run.Wall, run.CPU,
				MB(run.PeakRSS), MB(c.least), MB(c.below))
		}
	}
	if held[4096] != 1 {
		t.Fatal("held memory lost")
	}
	_, err := RunTimed("/bin/sh", "-c", "echo broken >&2; exit 3")
	if err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("failing process: error %v, want one quoting its stderr", err)
	}
}

func TestPeakRSS(t *testing.T) {
	if err := ResetPeakRSS(); err != nil {
		t.Fatal(err)
	}
	before, err := PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	// Touch 64 MiB so the peak must grow by about that much.
	buf := make([]byte, 64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	after, err := PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	if grew := after - before; grew < 60<<20 {
		t.Errorf("peak RSS grew by %.1f MB after touching 64 MiB", MB(grew))
	}
	if buf[4096] != 1 {
		t.Fatal("buffer lost")
	}
}

func TestCPUTime(t *testing.T) {
	before, err := CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	x := 1.0
	for i := range 20_000_000 {
		x += math.Sqrt(float64(i))
	}
	after, err := CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	if after <= before || x == 0 {
		t.Errorf("CPU time went from %v to %v over a busy loop", before, after)
	}
}

func TestLoadAverage(t *testing.T) {
	load, err := LoadAverage()
	if err != nil {
		t.Fatal(err)
	}
	if len(strings.Fields(load)) != 3 {
		t.Errorf("load average %q, want three numbers", load)
	}
}

func TestWorker(t *testing.T) {
	if _, err := os.Stat(Python()); err != nil {
		t.Fatalf("%s: %v (Debian's python3 is part of this machine's image)", Python(), err)
	}
	script := filepath.Join(t.TempDir(), "echo.py")
	src := "import json, sys\n" +
		"import os\n" +
		"print(json.dumps({'hello': 1}), flush=True)\n" +
		"for line in sys.stdin:\n" +
		"    req = json.loads(line)\n" +
		"    if req['n'] < 0:\n" +
		"        raise ValueError('negative n')\n" +
		"    print(json.dumps({'twice': int(os.environ['BENCH_TWICE']) * req['n']}), flush=True)\n"
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var hello struct{ Hello int }
	w, err := StartWorker(&hello, []string{"BENCH_TWICE=2"}, script)
	if err != nil {
		t.Fatal(err)
	}
	if hello.Hello != 1 {
		t.Errorf("greeting %+v", hello)
	}
	for i, n := range []int{3, 21} {
		var r struct{ Twice int }
		if err := w.Call(map[string]int{"n": n}, &r); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if r.Twice != 2*n {
			t.Errorf("case %d: twice %d = %d", i, n, r.Twice)
		}
	}
	err = w.Call(map[string]int{"n": -1}, new(map[string]any))
	if err == nil || !strings.Contains(err.Error(), "negative n") {
		t.Errorf("crashing worker: error %v, want one quoting the traceback", err)
	}
	if err := w.Close(); err == nil {
		t.Error("Close of a crashed worker returned no error")
	}
}

// TestWorkerPythonFromEnv checks that BICYC_BENCH_PYTHON replaces Debian's interpreter: a worker started
// through a wrapper script that records its own run answers as the interpreter it wraps, and a missing
// interpreter is named in the error.
func TestWorkerPythonFromEnv(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "ran")
	wrapper := filepath.Join(dir, "python")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\ntouch "+mark+"\nexec /usr/bin/python3 \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "hello.py")
	if err := os.WriteFile(script, []byte("import json\nprint(json.dumps({'hello': 2}), flush=True)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(PythonEnv, wrapper)
	if Python() != wrapper {
		t.Fatalf("Python() = %q with %s=%s", Python(), PythonEnv, wrapper)
	}
	var hello struct{ Hello int }
	w, err := StartWorker(&hello, nil, script)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if hello.Hello != 2 {
		t.Errorf("greeting %+v", hello)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("the worker did not run %s: %v", wrapper, err)
	}
	missing := filepath.Join(dir, "no-such-python")
	t.Setenv(PythonEnv, missing)
	if _, err := StartWorker(nil, nil, script); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing interpreter: error %v, want one naming %s", err, missing)
	}
	t.Setenv(PythonEnv, "")
	if Python() != "/usr/bin/python3" {
		t.Errorf("Python() = %q with %s empty, want Debian's /usr/bin/python3", Python(), PythonEnv)
	}
}
