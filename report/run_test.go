package report

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/rundir"
	"github.com/bicyc/bicyc/sweep"
)

func TestLoadRunRejectsBadFiles(t *testing.T) {
	good := threeTasks(full, 0, 0, true)
	cases := []struct {
		name    string
		damage  func(dir string) // applied to a fresh good run directory
		want    error
		mention string // the error must name this file
	}{
		{"truncated metrics", func(dir string) { truncate(t, filepath.Join(dir, "metrics.json")) }, rundir.ErrInvalidRun, "metrics.json"},
		{"truncated config", func(dir string) { truncate(t, filepath.Join(dir, "config.yaml")) }, rundir.ErrInvalidRun, "config.yaml"},
		{"unknown config key", func(dir string) {
			appendFile(t, filepath.Join(dir, "config.yaml"), "colour: blue\n")
		}, rundir.ErrInvalidRun, "config.yaml"},
		{"accuracy above 1", func(dir string) {
			replaceIn(t, filepath.Join(dir, "metrics.json"), `"acc": [`, `"acc": [[1.5],`)
		}, rundir.ErrInvalidRun, "metrics.json"},
		{"completed count disagrees", func(dir string) {
			replaceIn(t, filepath.Join(dir, "metrics.json"), `"completed_tasks": 3`, `"completed_tasks": 2`)
		}, rundir.ErrInvalidRun, "metrics.json"},
		{"negative drift", func(dir string) {
			replaceIn(t, filepath.Join(dir, "metrics.json"), `"mu_l2": 0.5`, `"mu_l2": -0.5`)
		}, rundir.ErrInvalidRun, "metrics.json"},
		{"method differs from config", func(dir string) {
			replaceIn(t, filepath.Join(dir, "metrics.json"), `"method": "bicyc"`, `"method": "finetune"`)
		}, rundir.ErrInvalidRun, "metrics.json"},
		{"no metrics yet", func(dir string) { os.Remove(filepath.Join(dir, "metrics.json")) }, fs.ErrNotExist, "metrics.json"},
	}
	for i, c := range cases {
		dir := good.write(t, filepath.Join(t.TempDir(), "runs"))
		c.damage(dir)
		_, err := LoadRun(dir)
		if !errors.Is(err, c.want) {
			t.Errorf("case %d (%s): error %v, want one wrapping %v", i, c.name, err, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.mention) {
			t.Errorf("case %d (%s): error %q does not name %s", i, c.name, err, c.mention)
		}
	}
}

func TestLoadFindsRunsSweepsAndNothing(t *testing.T) {
	root := t.TempDir()
	runs := filepath.Join(root, "runs")
	a := threeTasks(full, 0, 0, false).write(t, runs)
	threeTasks(finetune, 0, -0.2, false).write(t, runs)
	if err := os.MkdirAll(filepath.Join(runs, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	sweep := filepath.Join(root, "sweep")
	spec, _ := fakeSweep(t, sweep)
	// A run of the plan that has not finished a task yet.
	if err := os.RemoveAll(filepath.Join(sweep, spec.Plan()[4].Name)); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		dir     string
		runs    int
		pending int
		sweep   bool
		err     error
	}{
		{a, 1, 0, false, nil},
		{runs, 2, 0, false, nil},
		{sweep, 14, 1, true, nil},
		{filepath.Join(runs, "empty"), 0, 0, false, ErrNoRuns},
		{filepath.Join(root, "missing"), 0, 0, false, fs.ErrNotExist},
	}
	for i, c := range cases {
		set, err := Load(c.dir)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("case %d: error %v, want %v", i, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		if len(set.Runs) != c.runs || len(set.Pending) != c.pending || (set.Sweep != nil) != c.sweep {
			t.Errorf("case %d: %d runs, %d pending, sweep %v; want %d, %d, %v", i, len(set.Runs), len(set.Pending), set.Sweep != nil, c.runs, c.pending, c.sweep)
		}
	}
}

func TestVariantNames(t *testing.T) {
	cases := []struct {
		v         sweep.Variant
		tag, name string
	}{
		{full, "", "bicyc"},
		{noBi, "nobi", "bicyc w/o L_bi"},
		{noCyc, "nocyc", "bicyc w/o L_cyc"},
		{noBoth, "nobi-nocyc", "bicyc w/o L_bi, L_cyc"},
		{adagauss, "", "adagauss"},
	}
	for i, c := range cases {
		if c.v.Tag() != c.tag || c.v.String() != c.name {
			t.Errorf("case %d: tag %q name %q, want %q %q", i, c.v.Tag(), c.v.String(), c.tag, c.name)
		}
	}
	// Only bicyc uses the two losses: other methods ignore loss.bi, loss.cyc.
	c := threeTasks(adagauss, 0, 0, false).config("runs")
	c.Loss.Bi = false
	if v := sweep.VariantOf(c); v != adagauss {
		t.Errorf("adagauss with loss.bi off is variant %+v, want %+v", v, adagauss)
	}
}

func truncate(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, b[:len(b)/2])
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, append(b, s...))
}

func replaceIn(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", path, old)
	}
	writeFile(t, path, []byte(strings.Replace(string(b), old, new, 1)))
}
