package report

import (
	"encoding/json"
	"fmt"
	"image"
	_ "image/png" // image.DecodeConfig reads PNG headers
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestGenerateHandMadeSweep writes the report of a hand-made sweep with the
// ablation grid and drift, and checks its tables against the runs' own
// metrics.json and every figure against its stated size.
func TestGenerateHandMadeSweep(t *testing.T) {
	dir := t.TempDir()
	spec, _ := fakeSweep(t, dir)
	now := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	machine := Machine{NProc: 2, CPU: "Test CPU 9000", OS: "linux", Arch: "amd64", GoVersion: "go1.26"}
	res, err := Generate(dir, Options{Now: now, Machine: &machine})
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(res.Markdown)
	if err != nil {
		t.Fatal(err)
	}
	report := string(md)

	for i, want := range []string{"2026-03-01 12:30 UTC", "Test CPU 9000 (2 CPUs", "## Ablation: L_bi and L_cyc", "## Drift diagnostics", "| bicyc-s0 | bicyc | 0 | 3/3 |", "1m00s"} {
		if !strings.Contains(report, want) {
			t.Errorf("case %d: report.md lacks %q", i, want)
		}
	}

	// The results table, recomputed from the metrics.json files alone.
	for i, p := range []struct {
		method string
		names  []string
	}{
		{"bicyc", []string{"bicyc-s0", "bicyc-s1", "bicyc-s2"}},
		{"adagauss", []string{"adagauss-s0", "adagauss-s1", "adagauss-s2"}},
	} {
		cells := []string{}
		for _, km := range [][2]string{{"tag", "a_last"}, {"tag", "a_inc"}, {"tag", "f_last"}, {"taw", "a_last"}} {
			var vals []float64
			for _, n := range p.names {
				vals = append(vals, metricFromFile(t, filepath.Join(dir, n, "metrics.json"), km[0], km[1]))
			}
			cells = append(cells, meanStdPercent(vals))
		}
		row := fmt.Sprintf("| %s | 3 | %s |", p.method, strings.Join(cells, " | "))
		if !strings.Contains(report, row) {
			t.Errorf("case %d: report.md lacks the row %q", i, row)
		}
	}
	// The ablation grid in the paper's order, from the nobi-nocyc runs.
	var vals []float64
	for s := range 3 {
		vals = append(vals, metricFromFile(t, filepath.Join(dir, fmt.Sprintf("bicyc-nobi-nocyc-s%d", s), "metrics.json"), "tag", "a_last"))
	}
	if row := fmt.Sprintf("| ✗ | ✗ | 3 | %s |", meanStdPercent(vals)); !strings.Contains(report, row) {
		t.Errorf("report.md lacks the ablation row %q", row)
	}
	if strings.Index(report, "| ✗ | ✗ |") > strings.Index(report, "| ✓ | ✓ |") {
		t.Error("ablation rows are not in the paper's order (off/off first, on/on last)")
	}

	// Figures: 15 matrices, 1 gain, 3 curves, drift; all valid PNGs of the
	// stated size, all embedded in report.md.
	if len(res.Figures) != 20 {
		t.Errorf("%d figures, want 20", len(res.Figures))
	}
	for i, f := range res.Figures {
		checkPNG(t, i, filepath.Join(dir, f.File), f)
		if !strings.Contains(report, "]("+f.File+")") {
			t.Errorf("figure %d: %s not embedded in report.md", i, f.File)
		}
	}

	var sum summaryFile
	b, err := os.ReadFile(res.Summary)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Groups) != 5 || len(sum.Runs) != 15 || sum.Sweep == nil || sum.Sweep.Spec.Seeds != spec.Seeds {
		t.Errorf("summary.json: %d groups, %d runs, sweep %v", len(sum.Groups), len(sum.Runs), sum.Sweep)
	}
}

// TestGenerateSingleRunWithoutDrift covers a report on one run directory
// whose run stopped after two of three tasks.
func TestGenerateSingleRunWithoutDrift(t *testing.T) {
	f := threeTasks(adagauss, 4, 0, false)
	f.tag, f.taw = f.tag[:2], f.taw[:2]
	dir := f.write(t, t.TempDir())
	res, err := Generate(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(res.Markdown)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"No run has finished yet", "Not recorded: the runs had eval.drift off", "Not finished, left out of the tables: adagauss-s4", "| 2/3 |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("case %d: report.md lacks %q", i, want)
		}
	}
	if len(res.Figures) != 1 {
		t.Fatalf("figures %+v, want the accuracy matrix only", res.Figures)
	}
	checkPNG(t, 0, filepath.Join(dir, res.Figures[0].File), res.Figures[0])
}

// metricFromFile reads one metric of a run straight from its metrics.json.
func metricFromFile(t *testing.T, path, classifier, metric string) float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var set map[string]json.RawMessage
	if err := json.Unmarshal(m[classifier], &set); err != nil {
		t.Fatal(err)
	}
	var v float64
	if err := json.Unmarshal(set[metric], &v); err != nil {
		t.Fatalf("%s: %s.%s: %v", path, classifier, metric, err)
	}
	return v
}

// meanStdPercent formats values as the paper's tables do, with its own
// arithmetic: mean and sample std in percent, one decimal.
func meanStdPercent(vals []float64) string {
	var mean float64
	for _, v := range vals {
		mean += v
	}
	mean /= float64(len(vals))
	var ss float64
	for _, v := range vals {
		ss += (v - mean) * (v - mean)
	}
	return fmt.Sprintf("%.1f ± %.1f", 100*mean, 100*math.Sqrt(ss/float64(len(vals)-1)))
}

// checkPNG decodes the file's PNG header and compares the size with the
// figure's.
func checkPNG(t *testing.T, i int, path string, f Figure) {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Errorf("figure %d: %v", i, err)
		return
	}
	defer file.Close()
	cfg, format, err := image.DecodeConfig(file)
	if err != nil || format != "png" {
		t.Errorf("figure %d (%s): format %q, %v", i, f.File, format, err)
		return
	}
	if cfg.Width != f.Width || cfg.Height != f.Height {
		t.Errorf("figure %d (%s): %dx%d pixels, report says %dx%d", i, f.File, cfg.Width, cfg.Height, f.Width, f.Height)
	}
}

// TestLogTicks checks the labels of the log axis on the ranges the drift
// figure's symmetric KL takes.
func TestLogTicks(t *testing.T) {
	for _, tc := range []struct {
		min, max float64
		labels   []string
		ticks    int
	}{
		{12, 700, []string{"20", "50", "100", "200", "500"}, 15},
		{0.3, 4, []string{"0.5", "1", "2"}, 11},
		{0, 10, nil, 0},
	} {
		var labels []string
		ticks := logTicks{}.Ticks(tc.min, tc.max)
		for _, tk := range ticks {
			if tk.Value < tc.min || tk.Value > tc.max {
				t.Errorf("[%g, %g]: tick %g outside the range", tc.min, tc.max, tk.Value)
			}
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if !slices.Equal(labels, tc.labels) || len(ticks) != tc.ticks {
			t.Errorf("[%g, %g]: labels %v of %d ticks, want %v of %d", tc.min, tc.max, labels, len(ticks), tc.labels, tc.ticks)
		}
	}
}

// TestLinearTicks checks the labels of the curves' value axes.
func TestLinearTicks(t *testing.T) {
	for _, tc := range []struct {
		min, max float64
		labels   []string
	}{
		{47, 101, []string{"50", "60", "70", "80", "90", "100"}},
		{1.5, 14.4, []string{"2", "4", "6", "8", "10", "12", "14"}},
		{0.012, 0.09, []string{"0.02", "0.04", "0.06", "0.08"}},
		{5, 5, nil},
	} {
		var labels []string
		for _, tk := range (linearTicks{}).Ticks(tc.min, tc.max) {
			if tk.Value < tc.min || tk.Value > tc.max {
				t.Errorf("[%g, %g]: tick %g outside the range", tc.min, tc.max, tk.Value)
			}
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if !slices.Equal(labels, tc.labels) {
			t.Errorf("[%g, %g]: labels %v, want %v", tc.min, tc.max, labels, tc.labels)
		}
	}
}

// TestOneDecimal checks that a gain that rounds to zero prints without a sign.
func TestOneDecimal(t *testing.T) {
	for v, want := range map[float64]string{-0.04: "0.0", -0.06: "-0.1", 0.04: "0.0", 76.55: "76.5", math.Copysign(0, -1): "0.0"} {
		if got := oneDecimal(v); got != want {
			t.Errorf("oneDecimal(%g) = %q, want %q", v, got, want)
		}
	}
}
