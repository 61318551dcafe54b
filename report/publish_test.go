package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"image"
	_ "image/png" // image.DecodeConfig reads PNG headers
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/sweep"
)

var (
	testNow     = time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	testMachine = Machine{NProc: 2, CPU: "Test CPU 9000", OS: "linux", Arch: "amd64", GoVersion: "go1.26"}
)

// readmeText is a README around the results markers, with text on both
// sides that Publish must leave byte for byte, a stale section between the
// markers, and no newline at the end.
const (
	readmeHead = "# bicyc\n\nSome text — with ünïcode.\n\n## Results\n\n" + ReadmeBegin + "\n"
	readmeTail = ReadmeEnd + "\n\n## Tests\n\nMore text, no newline at the end."
	readmeText = readmeHead + "old results, typed by hand\n" + readmeTail
)

// publishLayout makes a sweep in root/runs and a repository root/repo with
// its README, and returns the sweep directory, the README and the
// publication directory inside the repository.
func publishLayout(t *testing.T) (sweep, readme, dest string) {
	t.Helper()
	root := t.TempDir()
	sweep = filepath.Join(root, "runs")
	fakeSweep(t, sweep)
	readme = filepath.Join(root, "repo", "README.md")
	if err := os.MkdirAll(filepath.Dir(readme), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, readme, []byte(readmeText))
	return sweep, readme, filepath.Join(root, "repo", "docs", "results", "sweep")
}

// TestPublishSweep publishes the hand-made sweep with a README: the
// publication holds exactly the report, its figures, sweep.json and the
// runs' small files; the README changes only between the markers, where it
// shows report.md's tables and two figures that exist; publishing again
// writes the same bytes and clears a crashed publish's leftovers.
func TestPublishSweep(t *testing.T) {
	sweep, readme, dest := publishLayout(t)
	run := filepath.Join(sweep, "bicyc-s0")
	for _, f := range []string{"log.txt", "stream.json", "checkpoints/task-1/state.json", "model/model.onnx", "core"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(run, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(run, f), []byte("x"))
	}
	opts := Options{Now: testNow, Machine: &testMachine}
	pub, err := Publish(sweep, Publication{Dest: dest, Readme: readme}, opts)
	if err != nil {
		t.Fatal(err)
	}
	md := checkPublishedFiles(t, pub, dest)
	text := checkReadmeSnippet(t, pub, md, sweep, dest, readme)
	checkRepublish(t, sweep, dest, readme, text, opts)
}

// checkPublishedFiles checks that the publication holds exactly the report,
// its figures, sweep.json and the runs' small files, and that report.md's
// images resolve inside it; it returns report.md.
func checkPublishedFiles(t *testing.T, pub *Published, dest string) string {
	t.Helper()
	want := []string{"report.md", "summary.json", "sweep.json", "bicyc-s0/log.txt", "bicyc-s0/stream.json"}
	for _, f := range pub.Report.Figures {
		want = append(want, f.File)
	}
	for _, p := range (sweep.Spec{Seeds: 3, Methods: []config.Method{config.MethodBicyc, config.MethodAdaGauss}, Ablation: true}).Plan() {
		want = append(want, p.Name+"/config.yaml", p.Name+"/metrics.json")
	}
	slices.Sort(want)
	got := listFiles(t, dest)
	if !slices.Equal(got, want) {
		t.Errorf("published files\n%v\nwant\n%v", got, want)
	}
	if !slices.Equal(pub.Files, want) {
		t.Errorf("Published.Files %v, want the files on disk", pub.Files)
	}
	if len(pub.Report.Figures) != 20 {
		t.Errorf("%d figures, want 20", len(pub.Report.Figures))
	}
	md := readString(t, filepath.Join(dest, "report.md"))
	for i, link := range markdownImages(md) {
		if _, err := os.Stat(filepath.Join(dest, link)); err != nil {
			t.Errorf("report.md image %d: %v", i, err)
		}
	}

	return md
}

// checkReadmeSnippet checks that the README changed only between the
// markers, where it shows report.md's tables and two figures that exist; it
// returns the README's text.
func checkReadmeSnippet(t *testing.T, pub *Published, md, sweep, dest, readme string) string {
	t.Helper()
	text := readString(t, readme)
	if !strings.HasPrefix(text, readmeHead) || !strings.HasSuffix(text, readmeTail) {
		t.Fatalf("README changed outside the markers:\n%s", text)
	}
	snippet := strings.TrimSuffix(strings.TrimPrefix(text, readmeHead), readmeTail)
	if snippet != pub.Snippet {
		t.Errorf("README holds\n%s\nPublished.Snippet is\n%s", snippet, pub.Snippet)
	}
	for i, want := range []string{
		"`bicyc report " + sweep + " --publish " + dest + " --readme " + readme + "`",
		"2026-03-01 12:30 UTC", "Machine: Test CPU 9000 (2 CPUs, linux/amd64, go1.26).",
		"15 runs, all finished.",
		// fakeSweep records 60+i seconds for run i: 15*60 + 105 = 16m45s.
		"Total wall time 16m45s (sum of the runs' wall_seconds in sweep.json)",
		"[docs/results/sweep/report.md](docs/results/sweep/report.md)",
	} {
		if !strings.Contains(snippet, want) {
			t.Errorf("case %d: snippet lacks %q:\n%s", i, want, snippet)
		}
	}
	// The snippet's tables are report.md's results table and ablation grid.
	snipTables, mdTables := markdownTables(snippet), markdownTables(md)
	if len(snipTables) != 2 {
		t.Fatalf("snippet has %d tables, want the results table and the ablation grid:\n%s", len(snipTables), snippet)
	}
	if !slices.Equal(snipTables[0], mdTables[0]) || !strings.HasPrefix(snipTables[0][0], "| method | seeds | TAg A_last | TAg A_inc | TAg F_last | TAw A_last |") {
		t.Errorf("snippet results table\n%s\nreport.md's\n%s", strings.Join(snipTables[0], "\n"), strings.Join(mdTables[0], "\n"))
	}
	if i := slices.IndexFunc(mdTables, func(tb []string) bool { return strings.HasPrefix(tb[0], "| L_bi |") }); i < 0 || !slices.Equal(snipTables[1], mdTables[i]) {
		t.Errorf("snippet ablation grid differs from report.md's:\n%s", strings.Join(snipTables[1], "\n"))
	}
	// Two figures, the TAg curve and the gain over adagauss, both PNGs
	// that exist relative to the README.
	images := markdownImages(snippet)
	if len(images) != 2 || images[0] != "docs/results/sweep/figures/a-last-tag.png" || images[1] != "docs/results/sweep/figures/gain-bicyc-vs-adagauss.png" {
		t.Errorf("snippet images %v", images)
	}
	for i, link := range images {
		checkPNGFile(t, i, filepath.Join(filepath.Dir(readme), filepath.FromSlash(link)))
	}

	return text
}

// checkRepublish publishes again after a simulated crash: the same bytes,
// the README unchanged (text), and the crash's leftovers gone.
func checkRepublish(t *testing.T, sweep, dest, readme, text string, opts Options) {
	t.Helper()
	// Publishing again: same bytes, and the leftovers of a publish killed
	// between its two renames are gone: the half-built copy, and the
	// previous publication waiting beside the destination.
	before := readTree(t, dest)
	crashed := filepath.Join(filepath.Dir(dest), ".sweep.new-123")
	if err := os.MkdirAll(filepath.Join(crashed, "figures"), 0o755); err != nil {
		t.Fatal(err)
	}
	holder := filepath.Join(filepath.Dir(dest), ".sweep.old-456")
	if err := os.Mkdir(holder, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dest, filepath.Join(holder, "sweep")); err != nil {
		t.Fatal(err)
	}
	if _, err := Publish(sweep, Publication{Dest: dest, Readme: readme}, opts); err != nil {
		t.Fatal(err)
	}
	if again := readString(t, readme); again != text {
		t.Errorf("second publish changed the README:\n%s", again)
	}
	after := readTree(t, dest)
	for f, b := range before {
		if !bytes.Equal(after[f], b) {
			t.Errorf("second publish changed %s", f)
		}
	}
	if len(after) != len(before) {
		t.Errorf("second publish: %d files, first %d", len(after), len(before))
	}
	siblings, err := os.ReadDir(filepath.Dir(dest))
	if err != nil {
		t.Fatal(err)
	}
	if len(siblings) != 1 {
		t.Errorf("beside the publication: %v, want it alone", siblings)
	}
}

// TestPublishWithoutReadme publishes a single run directory: its files land
// at the top of the publication, and no README is touched.
func TestPublishWithoutReadme(t *testing.T) {
	root := t.TempDir()
	run := threeTasks(finetune, 1, 0, false).write(t, filepath.Join(root, "runs"))
	dest := filepath.Join(root, "pub")
	pub, err := Publish(run, Publication{Dest: dest}, Options{Now: testNow, Machine: &testMachine})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"config.yaml", "figures/a-last-tag.png", "figures/a-last-taw.png", "figures/acc-tag-finetune-s1.png", "metrics.json", "report.md", "summary.json"}
	if got := listFiles(t, dest); !slices.Equal(got, want) || pub.Snippet != "" {
		t.Errorf("published %v, snippet %q; want %v and none", got, pub.Snippet, want)
	}
}

// TestReadmeMarkersAndBadPublications checks the errors of Publish: they
// come before anything is written, wrap a sentinel and name the file.
func TestReadmeMarkersAndBadPublications(t *testing.T) {
	cases := []struct {
		readme  string // README text; "" for no README
		dest    string // relative to the test's root; "" for none
		want    error
		mention string
	}{
		{"# x\n", "pub", ErrReadmeMarkers, "README.md"},
		{"# x\n" + ReadmeBegin + "\n", "pub", ErrReadmeMarkers, "bicyc-results:end"},
		{ReadmeBegin + "\n" + ReadmeBegin + "\n" + ReadmeEnd + "\n", "pub", ErrReadmeMarkers, "2 lines"},
		{ReadmeBegin + "\n" + ReadmeEnd + "\n" + ReadmeEnd + "\n", "pub", ErrReadmeMarkers, "README.md"},
		{ReadmeEnd + "\n" + ReadmeBegin + "\n", "pub", ErrReadmeMarkers, "before"},
		{readmeText, "", ErrPublish, "README.md"},
		{readmeText, "runs", ErrPublish, "overlap"},
		{readmeText, "runs/bicyc-s0/pub", ErrPublish, "overlap"},
		{readmeText, ".", ErrPublish, "overlap"},
		{readmeText, "notes", ErrPublish, "not an earlier publication"},
		{"", "", ErrPublish, "no publication directory"},
	}
	root := t.TempDir()
	sweep := filepath.Join(root, "runs")
	fakeSweep(t, sweep)
	if err := os.MkdirAll(filepath.Join(root, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "notes", "todo.txt"), []byte("keep me"))
	for i, c := range cases {
		var pub Publication
		if c.readme != "" {
			pub.Readme = filepath.Join(root, "README.md")
			writeFile(t, pub.Readme, []byte(c.readme))
		}
		if c.dest != "" {
			pub.Dest = filepath.Join(root, c.dest)
		}
		_, err := Publish(sweep, pub, Options{Now: testNow, Machine: &testMachine})
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("case %d: error %v, want one wrapping %v that mentions %q", i, err, c.want, c.mention)
		}
		if _, err := os.Stat(filepath.Join(root, "pub")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("case %d: the publication was written before the error", i)
		}
		if pub.Readme != "" && readString(t, pub.Readme) != c.readme {
			t.Errorf("case %d: README changed", i)
		}
	}
	if readString(t, filepath.Join(root, "notes", "todo.txt")) != "keep me" {
		t.Error("a directory that is not a publication was replaced")
	}
}

// TestPublishPartialSweep: a sweep with runs not started and a run stopped
// after two of three tasks must not read as complete in the README.
func TestPublishPartialSweep(t *testing.T) {
	sweep, readme, dest := publishLayout(t)
	for _, name := range []string{"bicyc-nobi-nocyc-s2", "bicyc-nocyc-s2"} {
		if err := os.Remove(filepath.Join(sweep, name, "metrics.json")); err != nil {
			t.Fatal(err)
		}
	}
	stopped := threeTasks(noBi, 2, 0.03, true)
	stopped.tag, stopped.taw = stopped.tag[:2], stopped.taw[:2]
	stopped.write(t, sweep)
	pub, err := Publish(sweep, Publication{Dest: dest, Readme: readme}, Options{Now: testNow, Machine: &testMachine})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pub.Snippet, "12 of 15 runs finished") || strings.Contains(pub.Snippet, "all finished") {
		t.Errorf("partial sweep snippet:\n%s", pub.Snippet)
	}
	if n := len(markdownImages(pub.Snippet)); n != 2 {
		t.Errorf("%d images in the snippet, want 2", n)
	}
}

// TestReadmeSnippetFigureChoice: without adagauss the second figure is the
// gain over finetune, and with bicyc alone its first run's accuracy matrix;
// a README with CRLF line endings gets a CRLF snippet.
func TestReadmeSnippetFigureChoice(t *testing.T) {
	cases := []struct {
		runs []fakeRun
		want string
	}{
		{[]fakeRun{threeTasks(full, 0, 0.04, false), threeTasks(finetune, 0, -0.2, false)}, "figures/gain-bicyc-vs-finetune.png"},
		{[]fakeRun{threeTasks(full, 1, 0.04, false), threeTasks(full, 0, 0.02, false)}, "figures/acc-tag-bicyc-s0.png"},
	}
	for i, c := range cases {
		root := t.TempDir()
		for _, r := range c.runs {
			r.write(t, filepath.Join(root, "runs"))
		}
		readme := filepath.Join(root, "README.md")
		head := "# x\r\n" + ReadmeBegin + "\r\n"
		writeFile(t, readme, []byte(head+ReadmeEnd+"\r\n"))
		pub, err := Publish(filepath.Join(root, "runs"), Publication{Dest: filepath.Join(root, "pub"), Readme: readme}, Options{Now: testNow, Machine: &testMachine})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		images := markdownImages(pub.Snippet)
		if len(images) != 2 || images[0] != "pub/figures/a-last-tag.png" || images[1] != "pub/"+c.want {
			t.Errorf("case %d: images %v, want the TAg curve and %s", i, images, c.want)
		}
		if strings.Count(pub.Snippet, "\n") != strings.Count(pub.Snippet, "\r\n") {
			t.Errorf("case %d: snippet mixes line endings", i)
		}
	}
}

// TestReportMarksForkedRuns: a run that took task 1 from another, and one
// that took every task (a rescored classifier variant), are marked in the
// Runs table and summary.json, and the total time in stages counts each
// task's training once.
func TestReportMarksForkedRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs")
	threeTasks(full, 0, 0, false).write(t, dir)
	fork := threeTasks(finetune, 0, 0, false)
	fork.tag[1][1], fork.tag[2][2] = 0.95, 0.96
	fork.trainedIn = "runs/sweeps/x/bicyc-s0"
	fork.write(t, dir)
	rescored := threeTasks(sweep.Variant{Method: config.MethodBicyc, Name: "cal", Bi: true, Cyc: true}, 0, 0, false)
	rescored.rescoredFrom = "runs/sweeps/x/bicyc-s0"
	rescored.write(t, dir)
	res, err := Generate(dir, Options{Now: testNow, Machine: &testMachine})
	if err != nil {
		t.Fatal(err)
	}
	md := readString(t, res.Markdown)
	// 3 tasks of 13 s each per run, task 1 of the fork counted once.
	for i, want := range []string{"| finetune-s0 (task 1 from bicyc-s0) | finetune | 0 | 3/3 |", "| bicyc-s0 | bicyc | 0 | 3/3 |",
		"| bicyc-cal-s0 (evaluated again from bicyc-s0) |", "Runs marked \"evaluated again from\"",
		"their wall time leaves task 1 out, while their time in stages includes task 1's stage times", "Total: 1m05s in stages."} {
		if !strings.Contains(md, want) {
			t.Errorf("case %d: report.md lacks %q", i, want)
		}
	}
	var sum summaryFile
	if err := json.Unmarshal([]byte(readString(t, res.Summary)), &sum); err != nil {
		t.Fatal(err)
	}
	for _, r := range sum.Runs {
		if want := map[string]string{"finetune-s0": "bicyc-s0", "bicyc-cal-s0": "bicyc-s0"}[r.Name]; r.FirstTaskFrom != want {
			t.Errorf("summary.json: %s task1_from %q, want %q", r.Name, r.FirstTaskFrom, want)
		}
		if want := map[string]string{"bicyc-cal-s0": "bicyc-s0"}[r.Name]; r.RescoredFrom != want {
			t.Errorf("summary.json: %s rescored_from %q, want %q", r.Name, r.RescoredFrom, want)
		}
	}
}

// listFiles returns the regular files under dir, relative, with forward
// slashes, sorted.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, f := range listFiles(t, dir) {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		out[f] = b
	}
	return out
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var imageLink = regexp.MustCompile(`!\[[^\]]*\]\(([^)]+)\)`)

// markdownImages returns the targets of the Markdown images in text.
func markdownImages(text string) []string {
	var out []string
	for _, m := range imageLink.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// markdownTables returns the tables of a Markdown text, each as its lines.
func markdownTables(text string) [][]string {
	var out [][]string
	var cur []string
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if strings.HasPrefix(line, "|") {
			cur = append(cur, line)
			continue
		}
		if cur != nil {
			out, cur = append(out, cur), nil
		}
	}
	if cur != nil {
		out = append(out, cur)
	}
	return out
}

// checkPNGFile checks that path is a PNG.
func checkPNGFile(t *testing.T, i int, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Errorf("image %d: %v", i, err)
		return
	}
	defer f.Close()
	if _, format, err := image.DecodeConfig(f); err != nil || format != "png" {
		t.Errorf("image %d (%s): format %q, %v", i, path, format, err)
	}
}
