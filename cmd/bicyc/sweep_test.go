package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/png" // image.DecodeConfig reads PNG headers
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/report"
	"github.com/bicyc/bicyc/rundir"
	"github.com/bicyc/bicyc/sweep"
)

func TestSweepSpecFromFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(file, []byte("config: c.yaml\nout: runs/s\nseeds: 5\nmethods: [adagauss]\nablation: true\nsets: [eval.drift=true]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defaults := sweepOptions{seeds: 3, methods: []string{"bicyc", "adagauss", "finetune"}}
	cases := []struct {
		global  globalOptions
		edit    func(*sweepOptions)
		changed []string
		want    sweep.Spec
	}{
		{globalOptions{configFile: "configs/fmnist-t5.yaml"}, func(*sweepOptions) {}, nil,
			sweep.Spec{Config: "configs/fmnist-t5.yaml", Out: "runs/sweep-fmnist-t5", Seeds: 3, Methods: []config.Method{config.MethodBicyc, config.MethodAdaGauss, config.MethodFinetune}}},
		{globalOptions{configFile: "x.yaml", sets: []string{"train.epochs=1"}}, func(o *sweepOptions) {
			o.seeds, o.methods, o.ablation, o.out, o.quick = 2, []string{"bicyc", "finetune"}, true, "o", true
		}, []string{"seeds", "methods", "ablation", "out", "quick"},
			sweep.Spec{Config: "x.yaml", Out: "o", Seeds: 2, Methods: []config.Method{config.MethodBicyc, config.MethodFinetune}, Ablation: true, Sets: []string{"train.epochs=1", "quick=true"}}},
		{globalOptions{}, func(o *sweepOptions) { o.file = file }, []string{"sweep"},
			sweep.Spec{Config: filepath.Join(dir, "c.yaml"), Out: "runs/s", Seeds: 5, Methods: []config.Method{config.MethodAdaGauss}, Ablation: true, Sets: []string{"eval.drift=true"}}},
		// Flags given override the file; defaults of flags not given do not.
		{globalOptions{sets: []string{"train.epochs=1"}}, func(o *sweepOptions) { o.file, o.seeds, o.ablation = file, 1, false }, []string{"sweep", "seeds", "ablation"},
			sweep.Spec{Config: filepath.Join(dir, "c.yaml"), Out: "runs/s", Seeds: 1, Methods: []config.Method{config.MethodAdaGauss}, Sets: []string{"eval.drift=true", "train.epochs=1"}}},
	}
	for i, c := range cases {
		o := defaults
		c.edit(&o)
		got, err := sweepSpec(&c.global, &o, func(name string) bool { return slices.Contains(c.changed, name) })
		if err != nil {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		if !specEqual(got, c.want) {
			t.Errorf("case %d: spec %+v, want %+v", i, got, c.want)
		}
	}
	if _, err := sweepSpec(&globalOptions{}, &defaults, func(string) bool { return false }); err == nil {
		t.Error("a sweep without --config or --sweep was accepted")
	}
}

func specEqual(a, b sweep.Spec) bool {
	return a.Config == b.Config && a.Out == b.Out && a.Seeds == b.Seeds && a.Ablation == b.Ablation &&
		slices.Equal(a.Methods, b.Methods) && slices.Equal(a.Sets, b.Sets)
}

// TestSweepDefinitions checks every file of configs/sweeps: it parses, is
// valid, and every run it plans gets a valid configuration from the real
// config loader.
func TestSweepDefinitions(t *testing.T) {
	files, err := filepath.Glob("../../configs/sweeps/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("sweep definitions: %v %v", files, err)
	}
	for i, f := range files {
		spec, err := sweep.ReadSpec(f)
		if err == nil {
			err = spec.Validate()
		}
		if err != nil {
			t.Errorf("case %d (%s): %v", i, f, err)
			continue
		}
		configs, err := spec.Configs(func(sets []string) (config.Config, error) {
			return loadConfig(&globalOptions{configFile: spec.Config, sets: sets}, nil)
		})
		if err != nil {
			t.Errorf("case %d (%s): %v", i, f, err)
			continue
		}
		if len(configs) != len(spec.Plan()) {
			t.Errorf("case %d (%s): %d configs for %d runs", i, f, len(configs), len(spec.Plan()))
		}
	}
	spec, err := sweep.ReadSpec("../../configs/sweeps/fmnist-t5-e10.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Plan()) != 18 || !spec.Ablation || filepath.Base(spec.Config) != "fmnist-t5-e10.yaml" {
		t.Errorf("the published sweep plans %d runs (want 3 seeds x 3 methods + 9 ablation runs) of %s", len(spec.Plan()), spec.Config)
	}
}

// cancelOnLine is a log writer that cancels a context the first time a
// line containing mark is written.
type cancelOnLine struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	mark   string
	cancel context.CancelFunc
}

func (w *cancelOnLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.cancel != nil && strings.Contains(w.buf.String(), w.mark) {
		w.cancel()
		w.cancel = nil
	}
	return len(p), nil
}

func (w *cancelOnLine) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestSweepEndToEnd trains the smoke sweep (2 seeds x bicyc, finetune on 2
// tasks of real Fashion-MNIST), interrupted after the first task of its
// first run and started again; then runs it a third time, which must skip
// every run, and checks the report against the runs' metrics.json.
func TestSweepEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("trains four small runs")
	}
	out := filepath.Join(t.TempDir(), "smoke")
	args := []string{"sweep", "--sweep", "../../configs/sweeps/smoke.yaml", "--out", out}
	run := func(ctx context.Context, log *cancelOnLine) (string, error) {
		root := newRootCmd()
		var stdout bytes.Buffer
		root.SetArgs(args)
		root.SetOut(&stdout)
		root.SetErr(log)
		err := root.ExecuteContext(ctx)
		return stdout.String(), err
	}

	// 1. Stop the sweep once the first run has finished task 1 of 2.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := &cancelOnLine{mark: "task 1 done", cancel: cancel}
	if _, err := run(ctx, first); err == nil || !strings.Contains(err.Error(), "sweep stopped at run bicyc-s0") {
		t.Fatalf("interrupted sweep: error %v", err)
	}
	rec, err := sweep.ReadRecord(filepath.Join(out, "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Runs[0].Status != sweep.StatusStopped || rec.Runs[1].Status != sweep.StatusPending {
		t.Fatalf("after the interruption: %+v", rec.Runs)
	}
	if m := readMetrics(t, filepath.Join(out, "bicyc-s0")); m.Completed != 1 || m.Tasks != 2 {
		t.Fatalf("interrupted run: %d of %d tasks", m.Completed, m.Tasks)
	}

	// 2. Run it again: bicyc-s0 resumes after task 1, the others train.
	second := &cancelOnLine{}
	stdout, err := run(context.Background(), second)
	if err != nil {
		t.Fatalf("resumed sweep: %v\n%s", err, tail(second.String()))
	}
	checkResumedSweep(t, out, second.String(), stdout)
	names := []string{"bicyc-s0", "finetune-s0", "bicyc-s1", "finetune-s1"}
	before := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(out, n, "metrics.json"))
		if err != nil {
			t.Fatal(err)
		}
		before[n] = string(b)
	}

	// 3. A third time: every run is finished and skipped.
	third := &cancelOnLine{}
	if _, err := run(context.Background(), third); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(third.String(), "finished, skipped"); n != 4 {
		t.Errorf("%d runs skipped, want 4:\n%s", n, third.String())
	}
	for _, n := range names {
		b, _ := os.ReadFile(filepath.Join(out, n, "metrics.json"))
		if string(b) != before[n] {
			t.Errorf("%s: metrics.json changed although the run was finished", n)
		}
	}

	checkSweepReport(t, out)
	// bicyc report rewrites the same report from the directory alone.
	root := newRootCmd()
	var stdout2 bytes.Buffer
	root.SetArgs([]string{"report", out})
	root.SetOut(&stdout2)
	if err := root.Execute(); err != nil || !strings.Contains(stdout2.String(), "(8 figures)") {
		t.Errorf("bicyc report: %v, %q", err, stdout2.String())
	}
}

// checkResumedSweep checks the second session of the smoke sweep in out
// from its log and stdout: bicyc-s0 resumed after task 1, and each seed's
// finetune run started from bicyc's task 1.
func checkResumedSweep(t *testing.T, out, logText, stdout string) {
	t.Helper()
	if !strings.Contains(logText, "bicyc-s0: resuming after task 1") || !strings.Contains(stdout, "report.md") {
		t.Errorf("resumed sweep did not resume bicyc-s0:\n%s", tail(logText))
	}
	log, err := os.ReadFile(filepath.Join(out, "bicyc-s0", "log.txt"))
	if err != nil || !strings.Contains(string(log), "resuming") {
		t.Errorf("bicyc-s0/log.txt shows no resume (%v)", err)
	}
	// Each seed trains task 1 once: finetune starts from bicyc's.
	for _, line := range []string{"finetune-s0: task 1 from bicyc-s0", "finetune-s1: task 1 from bicyc-s1"} {
		if !strings.Contains(logText, line) {
			t.Errorf("the sweep did not say %q:\n%s", line, tail(logText))
		}
	}
	if log, err := os.ReadFile(filepath.Join(out, "finetune-s1", "log.txt")); err != nil || !strings.Contains(string(log), "task 1 taken from") {
		t.Errorf("finetune-s1/log.txt does not say where task 1 came from (%v)", err)
	}
}

// checkSweepReport checks the smoke sweep's report in out: its numbers are
// the runs' own (mean of A_last over seeds) and its figures are the PNGs it
// lists.
func checkSweepReport(t *testing.T, out string) {
	t.Helper()
	var sum struct {
		Groups []struct {
			Variant sweep.Variant `json:"variant"`
			TAg     struct {
				ALast report.Stat `json:"a_last"`
			} `json:"tag"`
		} `json:"groups"`
		Figures []report.Figure `json:"figures"`
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Groups) != 2 {
		t.Fatalf("%d groups in summary.json, want bicyc and finetune", len(sum.Groups))
	}
	for i, g := range sum.Groups {
		m0 := readMetrics(t, filepath.Join(out, string(g.Variant.Method)+"-s0"))
		m1 := readMetrics(t, filepath.Join(out, string(g.Variant.Method)+"-s1"))
		want := (m0.TAg.ALast + m1.TAg.ALast) / 2
		if d := g.TAg.ALast.Mean - want; d > 1e-12 || d < -1e-12 || g.TAg.ALast.N != 2 {
			t.Errorf("case %d (%s): A_last %+v, the runs' mean is %v", i, g.Variant, g.TAg.ALast, want)
		}
		// The runs hold out a validation split: its A_last and F_last come first.
		v0, ok0 := readSummary(t, filepath.Join(out, string(g.Variant.Method)+"-s0")).Validation()
		v1, ok1 := readSummary(t, filepath.Join(out, string(g.Variant.Method)+"-s1")).Validation()
		if !ok0 || !ok1 {
			t.Fatalf("case %d: the runs have no validation metrics", i)
		}
		row := "| " + string(g.Variant.Method) + " | 2 | " + pmPercent(v0.ALast, v1.ALast) + " | " + pmPercent(v0.FLast, v1.FLast) + " | " + pmPercent(m0.TAg.ALast, m1.TAg.ALast) + " |"
		if !strings.Contains(string(md), row) {
			t.Errorf("case %d: report.md lacks %q", i, row)
		}
	}
	// 4 accuracy matrices, 1 gain, 2 curves, drift.
	if len(sum.Figures) != 8 {
		t.Errorf("%d figures, want 8", len(sum.Figures))
	}
	for i, f := range sum.Figures {
		file, err := os.Open(filepath.Join(out, f.File))
		if err != nil {
			t.Errorf("figure %d: %v", i, err)
			continue
		}
		cfg, format, err := image.DecodeConfig(file)
		file.Close()
		if err != nil || format != "png" || cfg.Width != f.Width || cfg.Height != f.Height {
			t.Errorf("figure %d (%s): %s %dx%d (%v), want png %dx%d", i, f.File, format, cfg.Width, cfg.Height, err, f.Width, f.Height)
		}
	}

}

// pmPercent formats two seeds' values as the report's tables do.
func pmPercent(a, b float64) string {
	mean := (a + b) / 2
	std := (a - b) / 2 * 1.4142135623730951 // sample std of two values: |a-b|/sqrt(2)
	if std < 0 {
		std = -std
	}
	return fmt.Sprintf("%.1f ± %.1f", 100*mean, 100*std)
}

func readMetrics(t *testing.T, dir string) metricsFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m metricsFile
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// metricsFile is the part of a run's metrics.json the test compares.
// readSummary reads a run's metrics.json in full.
func readSummary(t *testing.T, dir string) rundir.Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s rundir.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

type metricsFile struct {
	Completed int `json:"completed_tasks"`
	Tasks     int `json:"tasks"`
	TAg       struct {
		ALast float64 `json:"a_last"`
	} `json:"tag"`
}

func tail(s string) string {
	if len(s) > 3000 {
		return s[len(s)-3000:]
	}
	return s
}
