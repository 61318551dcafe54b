package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/train"
)

// trainRun is the Trainer of bicyc sweep, without log or progress.
func trainRun(ctx context.Context, dir string, cfg config.Config, from string, rescore bool) error {
	return train.Complete(ctx, dir, cfg, from, rescore, train.Options{})
}

func TestPlan(t *testing.T) {
	cases := []struct {
		spec Spec
		want string
	}{
		{Spec{Seeds: 2, Methods: []config.Method{config.MethodBicyc, config.MethodFinetune}}, "bicyc-s0 finetune-s0 bicyc-s1 finetune-s1"},
		{Spec{Seeds: 1, Methods: []config.Method{config.MethodAdaGauss, config.MethodBicyc}, Ablation: true}, "adagauss-s0 bicyc-s0 bicyc-nobi-s0 bicyc-nocyc-s0 bicyc-nobi-nocyc-s0"},
		{Spec{Seeds: 2, Ablation: true}, "bicyc-s0 bicyc-nobi-s0 bicyc-nocyc-s0 bicyc-nobi-nocyc-s0 bicyc-s1 bicyc-nobi-s1 bicyc-nocyc-s1 bicyc-nobi-nocyc-s1"},
		{Spec{Seeds: 2, Methods: []config.Method{config.MethodBicyc}, Variants: []NamedVariant{{Name: "n10000", Method: config.MethodBicyc}, {Name: "half", Method: config.MethodAdaGauss}}},
			"bicyc-s0 bicyc-n10000-s0 adagauss-half-s0 bicyc-s1 bicyc-n10000-s1 adagauss-half-s1"},
	}
	for i, c := range cases {
		var names []string
		for _, p := range c.spec.Plan() {
			names = append(names, p.Name)
		}
		if got := strings.Join(names, " "); got != c.want {
			t.Errorf("case %d: plan %s, want %s", i, got, c.want)
		}
	}
	p := PlannedRun{Variant: Variant{Method: config.MethodBicyc, Bi: true, Cyc: false}, Seed: 7}
	if got := strings.Join(p.Sets(true), " "); got != "method=bicyc seed=7 loss.bi=true loss.cyc=false" {
		t.Errorf("ablation run sets %q", got)
	}
	named := Spec{Seeds: 1, Ablation: true, Variants: []NamedVariant{{Name: "big", Method: config.MethodBicyc, Sets: []string{"adapter.transport_samples=10000"}}}}
	var got []string
	for _, p := range named.Plan() {
		if p.Variant.Name == "big" {
			got = p.Sets(true)
			if p.Variant.String() != "bicyc+big" {
				t.Errorf("named variant shows as %q, want bicyc+big", p.Variant)
			}
		}
	}
	if strings.Join(got, " ") != "method=bicyc seed=0 adapter.transport_samples=10000" {
		t.Errorf("named variant run sets %q: want its own sets and no ablation switches", got)
	}
}

func TestSpecValidate(t *testing.T) {
	ok := Spec{Config: "c.yaml", Out: "out", Seeds: 3, Methods: []config.Method{config.MethodBicyc, config.MethodAdaGauss}, Sets: []string{"eval.drift=true"}}
	cases := []struct {
		edit    func(*Spec)
		mention string // "" for a valid spec
	}{
		{func(*Spec) {}, ""},
		{func(s *Spec) { s.Seeds = 0 }, "seeds"},
		{func(s *Spec) { s.Methods = []config.Method{config.MethodBicyc, "ewc"} }, `"ewc"`},
		{func(s *Spec) { s.Methods = []config.Method{config.MethodBicyc, config.MethodBicyc} }, "twice"},
		{func(s *Spec) { s.Methods = nil }, "methods"},
		{func(s *Spec) { s.Sets = []string{"seed=4"} }, "sets"},
		{func(s *Spec) { s.Sets = []string{"train.epochs"} }, "key=value"},
		{func(s *Spec) { s.Ablation, s.Sets = true, []string{"loss.cyc=false"} }, "loss.cyc"},
		{func(s *Spec) { s.Config = "" }, "config"},
		{func(s *Spec) {
			s.Variants = []NamedVariant{{Name: "n10000", Method: config.MethodBicyc, Sets: []string{"adapter.transport_samples=10000"}}}
		}, ""},
		{func(s *Spec) { s.Sets = []string{"bogus.key=5"} }, `unknown config key "bogus.key"`},
		{func(s *Spec) { s.Methods, s.Variants = nil, []NamedVariant{{Name: "x", Method: config.MethodBicyc}} }, ""},
		{func(s *Spec) { s.Variants = []NamedVariant{{Name: "nobi", Method: config.MethodBicyc}} }, "variants[0].name"},
		{func(s *Spec) { s.Variants = []NamedVariant{{Name: "s2", Method: config.MethodBicyc}} }, "variants[0].name"},
		{func(s *Spec) { s.Variants = []NamedVariant{{Name: "Big", Method: config.MethodBicyc}} }, "variants[0].name"},
		{func(s *Spec) {
			s.Variants = []NamedVariant{{Name: "a", Method: config.MethodBicyc}, {Name: "a", Method: config.MethodBicyc}}
		}, "twice"},
		{func(s *Spec) {
			s.Variants = []NamedVariant{{Name: "a", Method: config.MethodBicyc}, {Name: "a", Method: config.MethodAdaGauss}}
		}, ""},
		{func(s *Spec) { s.Variants = []NamedVariant{{Name: "a", Method: "ewc"}} }, "variants[0].method"},
		{func(s *Spec) {
			s.Variants = []NamedVariant{{Name: "a", Method: config.MethodBicyc, Sets: []string{"seed=3"}}}
		}, "variants[0].sets"},
		{func(s *Spec) { s.Selection.ForgettingLimit = "adagauss" }, ""},
		{func(s *Spec) {
			s.Variants = []NamedVariant{{Name: "cal", Method: config.MethodBicyc}}
			s.Selection.ForgettingLimit = "bicyc+cal"
		}, ""},
		{func(s *Spec) { s.Selection.ForgettingLimit = "finetune" }, "selection.forgetting_limit"},
		{func(s *Spec) { s.Selection.ForgettingLimit = "bicyc+cal" }, "selection.forgetting_limit"},
	}
	for i, c := range cases {
		s := ok
		s.Methods = append([]config.Method(nil), ok.Methods...)
		c.edit(&s)
		err := s.Validate()
		switch {
		case c.mention == "" && err != nil:
			t.Errorf("case %d: %v", i, err)
		case c.mention != "" && (!errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), c.mention)):
			t.Errorf("case %d: error %v, want ErrInvalidSpec naming %s", i, err, c.mention)
		}
	}
	// loss.cyc is the sweep's to set only with the ablation on.
	s := ok
	s.Sets = []string{"loss.cyc=false"}
	if err := s.Validate(); err != nil {
		t.Errorf("loss.cyc=false without ablation: %v", err)
	}
}

func TestReadSpec(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sweeps", "s.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	texts := []string{"config: ../c.yaml\nout: runs/x\nseeds: 2\nmethods: [bicyc]\nsets: [eval.drift=true]\n",
		"config: c.yaml\nseed: 3\n", "seeds: three\n", ""}
	for i, text := range texts {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := ReadSpec(path)
		if i == 0 {
			// The config path is relative to the sweep file.
			if err != nil || s.Config != filepath.Join(dir, "c.yaml") || s.Out != "runs/x" || s.Seeds != 2 || len(s.Sets) != 1 {
				t.Errorf("case %d: spec %+v, %v", i, s, err)
			}
		} else if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), path) {
			t.Errorf("case %d: error %v, want ErrInvalidSpec naming the file", i, err)
		}
	}
}

// fakeRun is a finished run directory as train leaves it, reduced to what
// a sweep reads: config.yaml and metrics.json's task counts.
type fakeRun struct {
	variant Variant
	seed    int64
}

// config is the run's resolved configuration, as a sweep over the default
// config would make it.
func (f fakeRun) config(out string) config.Config {
	c := config.Default()
	c.Method, c.Seed = f.variant.Method, f.seed
	c.Loss.Bi, c.Loss.Cyc = f.variant.Bi, f.variant.Cyc
	c.RunDir, c.RunName = out, f.variant.RunName(f.seed)
	c.Export.Enabled = false
	return c
}

// fakeSweep writes the finished runs of a 3-seed sweep of bicyc and
// adagauss with the ablation grid, and its sweep.json recording 60+i
// seconds of wall time for run i.
func fakeSweep(t *testing.T, out string) (Spec, []fakeRun) {
	t.Helper()
	spec := Spec{Config: "configs/fmnist-t5.yaml", Out: out, Seeds: 3, Methods: []config.Method{config.MethodBicyc, config.MethodAdaGauss}, Ablation: true}
	var runs []fakeRun
	for _, p := range spec.Plan() {
		f := fakeRun{variant: p.Variant, seed: p.Seed}
		dir := filepath.Join(out, p.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		y, err := yaml.Marshal(f.config(out))
		if err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string][]byte{"config.yaml": y, "metrics.json": []byte(`{"completed_tasks": 5, "tasks": 5}`)} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		runs = append(runs, f)
	}
	rec := newRecord(spec, spec.Plan())
	for i := range rec.Runs {
		rec.Runs[i].Status, rec.Runs[i].WallSeconds = StatusFinished, 60+float64(i)
	}
	if err := durable.WriteJSON(filepath.Join(out, RecordFile), rec); err != nil {
		t.Fatal(err)
	}
	return spec, runs
}

// fakeConfigure returns, for the sets of a sweep run, the configuration of
// the matching hand-made run, as the command line's loader would.
func fakeConfigure(out string, runs []fakeRun) Configure {
	return func(sets []string) (config.Config, error) {
		kv := map[string]string{}
		for _, s := range sets {
			k, v, _ := strings.Cut(s, "=")
			kv[k] = v
		}
		for _, f := range runs {
			if string(f.variant.Method) == kv["method"] && strconv.FormatInt(f.seed, 10) == kv["seed"] &&
				(kv["loss.bi"] == "" || kv["loss.bi"] == strconv.FormatBool(f.variant.Bi)) &&
				(kv["loss.cyc"] == "" || kv["loss.cyc"] == strconv.FormatBool(f.variant.Cyc)) {
				return f.config(out), nil
			}
		}
		return config.Config{}, errors.New("no such run")
	}
}

// TestRunSweepSkipsFinishedRuns runs a sweep whose runs have all finished:
// nothing trains, the record keeps the wall times, and Finish runs.
func TestRunSweepSkipsFinishedRuns(t *testing.T) {
	dir := t.TempDir()
	spec, runs := fakeSweep(t, dir)
	before, err := os.Stat(filepath.Join(dir, "bicyc-s0", "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	var status bytes.Buffer
	finished := false
	rec, err := Run(context.Background(), spec, fakeConfigure(dir, runs), Options{Train: trainRun, Status: &status, Finish: func() error { finished = true; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(status.String(), "finished, skipped"); n != 15 {
		t.Errorf("%d runs skipped, want 15:\n%s", n, status.String())
	}
	for i, r := range rec.Runs {
		if r.Status != StatusFinished || r.WallSeconds < 60+float64(i) {
			t.Errorf("run %d %s: status %s, wall %v s (the earlier session recorded %d s)", i, r.Name, r.Status, r.WallSeconds, 60+i)
		}
	}
	after, err := os.Stat(filepath.Join(dir, "bicyc-s0", "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(before.ModTime()) {
		t.Error("a finished run's metrics.json was rewritten")
	}
	if !finished {
		t.Error("the sweep did not call Finish")
	}
}

// TestRunSweepRefusesChangedConfig: a run directory made with other
// settings must not be resumed or counted as this sweep's run.
func TestRunSweepRefusesChangedConfig(t *testing.T) {
	dir := t.TempDir()
	spec, runs := fakeSweep(t, dir)
	configure := func(sets []string) (config.Config, error) {
		c, err := fakeConfigure(dir, runs)(sets)
		c.Train.Epochs = 9
		return c, err
	}
	_, err := Run(context.Background(), spec, configure, Options{Train: trainRun})
	if !errors.Is(err, ErrConfigChanged) || !strings.Contains(err.Error(), "train.epochs: 3 -> 9") {
		t.Fatalf("error %v, want ErrConfigChanged naming train.epochs", err)
	}
	// Threads and the path to the sweep directory do not change an experiment.
	configure = func(sets []string) (config.Config, error) {
		c, err := fakeConfigure(dir, runs)(sets)
		c.Threads, c.RunDir = 1, c.RunDir+"/"
		return c, err
	}
	if _, err := Run(context.Background(), spec, configure, Options{Train: trainRun}); err != nil {
		t.Fatalf("threads and run_dir changes refused: %v", err)
	}
}

// TestPlanCells: a cell that differs from an earlier one only in
// classifier.* keys waits for it to be rescored from it (even when a fork
// source comes first), one that differs in the method waits for its seed's
// first run to fork task 1, and waves follow the waits.
func TestPlanCells(t *testing.T) {
	spec := Spec{Out: t.TempDir(), Seeds: 2, Methods: []config.Method{config.MethodBicyc, config.MethodAdaGauss},
		Variants: []NamedVariant{{Name: "cal", Method: config.MethodAdaGauss, Sets: []string{"classifier.shrink=0.5"}}}}
	var configs []config.Config
	for _, r := range spec.Plan() {
		c := config.Default()
		c.Method, c.Seed, c.RunName = r.Variant.Method, r.Seed, r.Name
		if r.Variant.Name == "cal" {
			c.Classifier.Shrink = 0.5
		}
		configs = append(configs, c)
	}
	p := planOf(spec, configs)
	want := []struct {
		waits   int
		rescore bool
		wave    int
	}{{-1, false, 0}, {0, false, 1}, {1, true, 2}, {-1, false, 0}, {3, false, 1}, {4, true, 2}}
	for i, c := range p.Cells {
		if c.Index != i || c.WaitsFor != want[i].waits || c.Rescore != want[i].rescore || c.Wave != want[i].wave {
			t.Errorf("case %d (%s): waits for %d (rescore %v), wave %d; want %+v", i, c.Run.Name, c.WaitsFor, c.Rescore, c.Wave, want[i])
		}
	}
	if got := fmt.Sprint(p.Waves()); got != "[[0 3] [1 4] [2 5]]" {
		t.Errorf("waves %s", got)
	}
	if _, err := p.Cell(6); err == nil || !strings.Contains(err.Error(), "cells 0-5") {
		t.Errorf("cell 6 of 6: %v", err)
	}
}
