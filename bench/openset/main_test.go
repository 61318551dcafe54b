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
