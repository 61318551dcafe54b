package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	o := options{out: out, work: t.TempDir(), configFile: "testdata/tiny.yaml", seeds: []int{0}, adds: []int{10}, learn: true}
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
	if !strings.Contains(string(readme), "| 0 | 10 |") {
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
