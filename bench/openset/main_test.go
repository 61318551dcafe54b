package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/bicyc/bicyc/config"
)

var runOpenset = flag.Bool("openset", false, "run the tiny end-to-end experiment (trains 4 tiny tasks and one learn task, about a minute)")

// TestTinyExperiment runs the whole experiment on testdata/tiny.yaml (40
// training images per class, one epoch): it checks the pipeline and the
// output files, not the numbers. Run it with -openset.
func TestTinyExperiment(t *testing.T) {
	if !*runOpenset {
		t.Skip("trains on Fashion-MNIST; run with -openset")
	}
	out := t.TempDir()
	o := options{out: out, work: t.TempDir(), configFile: "testdata/tiny.yaml", seeds: []int{0}, adds: []int{10}, learn: true, unknown: 2}
	if err := run(context.Background(), o, io.Discard); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Results []seedResult }
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	r := got.Results[0]
	if len(got.Results) != 1 || len(r.Unknown) != 2 || r.AcceptRate != 0.95 || len(r.Added) != 1 ||
		r.Added[0].Add.New == 0 || r.Added[0].Learn == (accuracy{}) || r.Calibrated.AUROC <= 0 {
		t.Fatalf("results %+v", got.Results)
	}
	readme, _ := os.ReadFile(filepath.Join(out, "README.md"))
	if !strings.Contains(string(readme), "| 0 | 10 |") || !strings.Contains(string(readme), "Per class: 40 training images of which 5 held out") {
		t.Errorf("README.md:\n%s", readme)
	}
}

// TestRender rewrites README.md from a results.json: the run's command,
// machine and budget, per-seed rows and mean ± sample std rows.
func TestRender(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Quick = true
	rep := report{Config: cfg, ConfigFile: "budget.yaml", Run: runInfo{Args: []string{"--seeds", "0,1"}, Machine: "linux/amd64, test CPU, 2 logical CPUs"}}
	for seed, auroc := range []float64{0.8, 0.9} {
		rep.Results = append(rep.Results, seedResult{Seed: seed, Unknown: []int{3, 7}, Calibrated: detection{AUROC: auroc},
			AcceptRate: 0.95, AcceptedKnown: 0.94, Added: []addition{{N: 10, Add: accuracy{New: 0.5, Old: 0.7}}}})
	}
	if err := writeResults(dir, rep); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "README.md")); err != nil {
		t.Fatal(err)
	}
	if err := render(dir); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"go run ./bench/openset --seeds 0,1`", "test CPU", "quick profile: a reduced budget",
		"500 training images of which 50 held out", "| 1 | Dress, Sneaker | 0.900 |", "| mean ± std | | 0.850 ± 0.071 | 0.000 ± 0.000 |",
		"| mean ± std | 10 | 0.500 ± 0.000 | 0.700 ± 0.000 | - | - |"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README.md lacks %q:\n%s", want, readme)
		}
	}
	if err := render(t.TempDir()); err == nil {
		t.Error("render of a folder without results.json succeeded")
	}
}

// TestStartRunDropsWork keeps every argument but --work and its value.
func TestStartRunDropsWork(t *testing.T) {
	got := startRun([]string{"--seeds", "0", "--work", "/scratch/w", "-work=/x", "--quick"}).Args
	if strings.Join(got, " ") != "--seeds 0 --quick" {
		t.Errorf("args %q", got)
	}
}

// TestBudgetLine runs the report path with configs/fmnist-t5.yaml, which
// trains on every image (data.train_per_class 0): the budget line states
// the counts the run's own config.yaml and image folders give, and a
// results.json from before budgets were recorded says "all", never 0.
func TestBudgetLine(t *testing.T) {
	base, err := baseConfig(options{configFile: "../../configs/fmnist-t5.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := seedConfig(base, 0, filepath.Join(dir, "data"), 8)
	run := filepath.Join(dir, "run")
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for path, n := range map[string]int{"data/train/Bag": 20, "data/train/Coat": 25, "data/test/Bag": 7, "data/test/Coat": 7, "run": 0} {
		if err := os.MkdirAll(filepath.Join(dir, path), 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if err := os.WriteFile(filepath.Join(dir, path, fmt.Sprintf("%05d.png", i)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(run, "config.yaml"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	bud, err := runBudget(run, filepath.Join(dir, "data/train"), filepath.Join(dir, "data/test"))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		budget     *budget
		want, lack []string
	}{
		{&bud, []string{"Per class: 20 training images of which 2 held out", "7 test images", "Stage I: 6 epochs on task 1", "3 on later tasks, batch 128"}, []string{"quick"}},
		{nil, []string{"Per class: all training images of which 10 % held out", "all test images", "Stage I: 6 epochs on task 1"}, []string{"quick"}},
	} {
		rep := report{Config: base, ConfigFile: "configs/fmnist-t5.yaml", Results: []seedResult{{Seed: 0, Unknown: []int{3, 7}, Budget: c.budget}}}
		md := markdown(rep)
		if !strings.Contains(md, "- budget: the defaults with configs/fmnist-t5.yaml") {
			t.Errorf("case %d: no budget line:\n%s", i, md)
		}
		for _, w := range c.want {
			if !strings.Contains(md, w) {
				t.Errorf("case %d: README lacks %q:\n%s", i, w, md)
			}
		}
		for _, w := range append(c.lack, " 0 training images", " 0 test images") {
			if strings.Contains(md, w) {
				t.Errorf("case %d: README says %q:\n%s", i, w, md)
			}
		}
	}
}
