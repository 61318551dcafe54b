package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/report"
)

// realRuns copies the run directories of the committed e10 results (real
// metrics of real training runs) into a fresh directory of runs, without
// their report, and returns it with the runs' TAg A_last by run name.
func realRuns(t *testing.T) (string, map[string]float64) {
	t.Helper()
	metrics, err := filepath.Glob("../../docs/results/e10/*/metrics.json")
	if err != nil || len(metrics) == 0 {
		t.Fatalf("no runs in docs/results/e10: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "runs")
	aLast := map[string]float64{}
	for _, m := range metrics {
		src := filepath.Dir(m)
		dst := filepath.Join(dir, filepath.Base(src))
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		aLast[filepath.Base(src)] = readMetrics(t, dst).TAg.ALast
	}
	return dir, aLast
}

// runReportCmd runs `bicyc report args...` and returns its output.
func runReportCmd(args ...string) (string, error) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetArgs(append([]string{"report"}, args...))
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	return out.String(), err
}

// TestReportPublishReadme publishes real runs into a repository and
// regenerates its README's results section through the command line.
func TestReportPublishReadme(t *testing.T) {
	runs, aLast := realRuns(t)
	repo := filepath.Join(filepath.Dir(runs), "repo")
	readme := filepath.Join(repo, "README.md")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	head, tail := "# bicyc\n\n"+report.ReadmeBegin+"\n", report.ReadmeEnd+"\n\nThe end.\n"
	if err := os.WriteFile(readme, []byte(head+tail), 0o644); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(repo, "docs", "results", "e10")
	out, err := runReportCmd(runs, "--publish", dest, "--readme", readme)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "published") || !strings.Contains(out, readme) {
		t.Errorf("output %q", out)
	}
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if !strings.HasPrefix(text, head) || !strings.HasSuffix(text, tail) {
		t.Fatalf("README changed outside the markers:\n%s", text)
	}
	for i, want := range []string{
		fmt.Sprintf("`bicyc report %s --publish %s --readme %s`", runs, dest, readme),
		fmt.Sprintf("%d runs, all finished.", len(aLast)),
		"](docs/results/e10/figures/a-last-tag.png)",
		"[docs/results/e10/report.md](docs/results/e10/report.md)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("case %d: README lacks %q:\n%s", i, want, text)
		}
	}
	for name, a := range aLast {
		method := strings.Split(strings.TrimPrefix(name, "e10-"), "-")[0]
		if row := fmt.Sprintf("| %s | 1 | %.1f |", method, 100*a); !strings.Contains(text, row) {
			t.Errorf("README lacks the row %q of %s", row, name)
		}
	}
	for _, f := range []string{"report.md", "summary.json", "figures/a-last-tag.png"} {
		if _, err := os.Stat(filepath.Join(dest, f)); err != nil {
			t.Errorf("publication: %v", err)
		}
	}
}

// TestReportReadmeErrors: --readme without --publish, and a README without
// markers, fail before anything is written, naming the flag or the file.
func TestReportReadmeErrors(t *testing.T) {
	runs, _ := realRuns(t)
	readme := filepath.Join(filepath.Dir(runs), "README.md")
	if err := os.WriteFile(readme, []byte("# no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(filepath.Dir(runs), "pub")
	cases := []struct {
		args    []string
		mention string
	}{
		{[]string{runs, "--readme", readme}, "--readme needs --publish"},
		{[]string{runs, "--publish", dest, "--readme", readme}, readme},
	}
	for i, c := range cases {
		if _, err := runReportCmd(c.args...); err == nil || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("case %d: error %v, want one naming %s", i, err, c.mention)
		}
		if _, err := os.Stat(filepath.Join(runs, "report.md")); err == nil {
			t.Errorf("case %d: report written despite the error", i)
		}
		if _, err := os.Stat(dest); err == nil {
			t.Errorf("case %d: publication written despite the error", i)
		}
	}
}
