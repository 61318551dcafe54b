package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/sweep"
)

// Lines that delimit the generated results section of a README. Everything
// between them belongs to Publish; everything outside them is left alone.
const (
	ReadmeBegin = "<!-- bicyc-results:begin -->"
	ReadmeEnd   = "<!-- bicyc-results:end -->"
)

// ErrReadmeMarkers is wrapped when a README does not hold exactly one
// ReadmeBegin line followed by exactly one ReadmeEnd line.
var ErrReadmeMarkers = errors.New("results markers")

// ErrPublish is wrapped when a publication is impossible as asked: no
// destination, a destination that overlaps the report directory or is not
// an earlier publication, a README inside the destination.
var ErrPublish = errors.New("cannot publish")

// runFiles are the files of a run directory that Publish copies: the small
// text files train writes. Checkpoints and model directories stay behind.
var runFiles = []string{"config.yaml", "stream.json", "metrics.json", "metrics.csv", "acc_tag.csv", "acc_taw.csv", "log.txt"}

// Publication says where Publish puts a report.
type Publication struct {
	// Dest is the directory that receives the report, e.g.
	// docs/results/fmnist-t5-e10; it is replaced as a whole.
	Dest string
	// Readme is a Markdown file whose results section (between ReadmeBegin
	// and ReadmeEnd) Publish regenerates; "" leaves every README alone.
	Readme string
}

// Published is what Publish wrote.
type Published struct {
	// Report is what Generate wrote in the report directory.
	Report *Result
	// Dest is the publication directory; Files its files, relative to it
	// with forward slashes, sorted.
	Dest  string
	Files []string
	// Snippet is the text now between the README's markers, "" without a
	// README.
	Snippet string
}

// Publish writes the report of dir (Generate) and copies it into pub.Dest:
//
//	report.md, summary.json     the report
//	figures/*.png               the figures report.md shows
//	sweep.json                  when dir is a sweep
//	<run>/config.yaml, ...      every reported run's small text files
//	                            (config.yaml, stream.json, metrics.json,
//	                            metrics.csv, acc_tag.csv, acc_taw.csv,
//	                            log.txt, those that exist), never its
//	                            checkpoints/ or model/
//
// in the same relative layout as dir, so report.md's links resolve. The
// copy is built in a sibling directory .<dest>.publish-tmp and swapped in
// with two renames (the old copy goes to .<dest>.publish-old, then away):
// an interrupted Publish leaves the previous publication or the new one,
// never a mix (killed between the renames, the previous one waits in
// .<dest>.publish-old), and the next Publish restores or removes the
// leftovers before it starts. Publish refuses to replace a Dest that is
// neither empty nor an earlier publication (it has report.md and
// summary.json), and a Dest that contains dir or lies inside it.
//
// With pub.Readme set, Publish then replaces the lines between ReadmeBegin
// and ReadmeEnd in that file with a snippet: the command that made it
// (`bicyc report <dir> --publish <dest> --readme <readme>`, the arguments as
// given), the date, the machine, the number of runs (how many of the
// planned ones finished, for a partial sweep) and their total wall time,
// the results table and the ablation grid of report.md, two figures (TAg
// A_last after each task, and the gain of bicyc over adagauss, else over
// finetune, else the first bicyc run's accuracy matrix) and a link to the
// published report.md, all paths relative to the README's directory. Bytes
// outside the markers stay identical; the file is replaced atomically. The
// markers are checked before anything is written: missing or repeated
// ones give an error wrapping ErrReadmeMarkers that names the file.
//
// With the same opts.Now and opts.Machine, publishing the same runs again
// writes the same bytes. Publish is not safe for concurrent use on the
// same Dest or README.
func Publish(dir string, pub Publication, opts Options) (*Published, error) {
	if pub.Dest == "" {
		if pub.Readme != "" {
			return nil, fmt.Errorf("%w: README %s: a README update needs a publication directory to link to", ErrPublish, pub.Readme)
		}
		return nil, fmt.Errorf("%w: no publication directory", ErrPublish)
	}
	if err := checkDest(dir, pub); err != nil {
		return nil, err
	}
	var readme *readmeParts
	if pub.Readme != "" {
		var err error
		if readme, err = readReadme(pub.Readme); err != nil {
			return nil, err
		}
	}
	g, err := generate(dir, opts)
	if err != nil {
		return nil, err
	}
	files, err := publishDir(g, pub.Dest)
	if err != nil {
		return nil, err
	}
	out := &Published{Report: g.res, Dest: pub.Dest, Files: files}
	if readme == nil {
		return out, nil
	}
	out.Snippet, err = readmeSnippet(g, dir, pub, readme.newline)
	if err != nil {
		return nil, err
	}
	text := readme.before + out.Snippet + readme.after
	if err := durable.WriteFile(pub.Readme, []byte(text)); err != nil {
		return nil, err
	}
	return out, nil
}

// checkDest refuses destinations that would destroy the runs or something
// other than an earlier publication, and a README that the swap would
// delete.
func checkDest(dir string, pub Publication) error {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	absDest, err := filepath.Abs(pub.Dest)
	if err != nil {
		return err
	}
	if within(absDir, absDest) || within(absDest, absDir) {
		return fmt.Errorf("%w: %s and the report directory %s overlap: publish into a directory outside the runs", ErrPublish, pub.Dest, dir)
	}
	if pub.Readme != "" {
		absReadme, err := filepath.Abs(pub.Readme)
		if err != nil {
			return err
		}
		if within(absReadme, absDest) {
			return fmt.Errorf("%w: README %s lies inside %s, which publishing replaces", ErrPublish, pub.Readme, pub.Dest)
		}
	}
	info, err := os.Stat(pub.Dest)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !info.IsDir():
		return fmt.Errorf("%w: %s is not a directory", ErrPublish, pub.Dest)
	}
	entries, err := os.ReadDir(pub.Dest)
	if err != nil || len(entries) == 0 {
		return err
	}
	if !isPublication(pub.Dest) {
		return fmt.Errorf("%w: %s holds files but no report.md and summary.json, so it is not an earlier publication; refusing to replace it", ErrPublish, pub.Dest)
	}
	return nil
}

// isPublication reports whether dir holds what every publication has.
func isPublication(dir string) bool {
	for _, name := range []string{"report.md", "summary.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}

// within reports whether path is root or lies under it; both absolute.
func within(path, root string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// publishDir builds the publication of g in a new sibling of dest
// (durable.NewDir) and swaps it in (durable.ReplaceDir); it returns the
// files, relative to dest.
func publishDir(g *generated, dest string) ([]string, error) {
	dest = filepath.Clean(dest)
	if err := durable.Recover(dest, isPublication); err != nil {
		return nil, fmt.Errorf("publishing %s: %w", dest, err)
	}
	tmp, err := durable.NewDir(dest)
	if err != nil {
		return nil, fmt.Errorf("publishing %s: %w", dest, err)
	}
	defer os.RemoveAll(tmp)

	dir := g.set.Dir
	files := []string{"report.md", "summary.json"}
	for _, f := range g.res.Figures {
		files = append(files, f.File)
	}
	if g.set.Sweep != nil {
		files = append(files, sweep.RecordFile)
	}
	for _, r := range g.set.Runs {
		rel, err := filepath.Rel(dir, r.Dir)
		if err != nil {
			return nil, err
		}
		for _, name := range runFiles {
			f := filepath.ToSlash(filepath.Join(rel, name))
			if _, err := os.Stat(filepath.Join(dir, f)); errors.Is(err, fs.ErrNotExist) {
				continue
			}
			files = append(files, f)
		}
	}
	slices.Sort(files)
	files = slices.Compact(files)
	for _, f := range files {
		if err := copyFile(filepath.Join(dir, f), filepath.Join(tmp, f)); err != nil {
			return nil, fmt.Errorf("publishing %s: %w", dest, err)
		}
	}

	if err := durable.ReplaceDir(tmp, dest); err != nil {
		return nil, fmt.Errorf("publishing %s: %w", dest, err)
	}
	return files, nil
}

// copyFile copies src to dst, creating dst's directory.
func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// readmeParts is a README split around its results markers: before ends
// with the ReadmeBegin line, after starts with the ReadmeEnd line.
type readmeParts struct {
	before, after string
	// newline is the line ending of the ReadmeBegin line, "\n" or "\r\n",
	// which the snippet uses too.
	newline string
}

// readReadme reads a README and splits it around its markers.
func readReadme(path string) (*readmeParts, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	text := string(b)
	var begins, ends []int // byte offsets of the marker lines' starts
	for off := 0; off < len(text); {
		line, _, _ := strings.Cut(text[off:], "\n")
		switch strings.TrimRight(line, " \t\r") {
		case ReadmeBegin:
			begins = append(begins, off)
		case ReadmeEnd:
			ends = append(ends, off)
		}
		off += len(line) + 1
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w: %s", path, ErrReadmeMarkers, fmt.Sprintf(format, args...))
	}
	switch {
	case len(begins) == 0:
		return nil, bad("no line %s (put it and %s around the results section)", ReadmeBegin, ReadmeEnd)
	case len(ends) == 0:
		return nil, bad("no line %s after %s", ReadmeEnd, ReadmeBegin)
	case len(begins) > 1:
		return nil, bad("%d lines %s, want one", len(begins), ReadmeBegin)
	case len(ends) > 1:
		return nil, bad("%d lines %s, want one", len(ends), ReadmeEnd)
	case ends[0] < begins[0]:
		return nil, bad("%s comes before %s", ReadmeEnd, ReadmeBegin)
	}
	line, _, found := strings.Cut(text[begins[0]:], "\n")
	if !found {
		return nil, bad("%s is the last line", ReadmeBegin)
	}
	p := &readmeParts{before: text[:begins[0]+len(line)+1], after: text[ends[0]:], newline: "\n"}
	if strings.HasSuffix(line, "\r") {
		p.newline = "\r\n"
	}
	return p, nil
}

// readmeSnippet is the text Publish puts between the README's markers.
func readmeSnippet(g *generated, dir string, pub Publication, newline string) (string, error) {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	rel := func(file string) (string, error) {
		from, err := filepath.Abs(filepath.Dir(pub.Readme))
		if err != nil {
			return "", err
		}
		to, err := filepath.Abs(filepath.Join(pub.Dest, file))
		if err != nil {
			return "", err
		}
		r, err := filepath.Rel(from, to)
		return filepath.ToSlash(r), err
	}
	set, opts := g.set, g.opts

	p("*Generated by `bicyc report %s --publish %s --readme %s` on %s; do not edit between the bicyc-results markers, run the command again.*\n\n",
		shellQuote(dir), shellQuote(pub.Dest), shellQuote(pub.Readme), opts.Now.UTC().Format(dateLayout))
	p("Machine: %s. %s\n\n", opts.Machine, trainedWith(set))
	if len(set.Runs) > 0 {
		p("%s\n\n", describeConfig(set.Runs[0].Config))
	}

	finished := 0
	for _, r := range set.Runs {
		if r.Finished() {
			finished++
		}
	}
	planned := len(set.Runs) + len(set.Pending)
	if set.Sweep != nil {
		planned = len(set.Sweep.Runs)
	}
	if finished < planned {
		p("**Partial: %d of %d runs finished**; the table and figures cover the finished runs only.", finished, planned)
	} else if planned == 1 {
		p("1 run, finished.")
	} else {
		p("%d runs, all finished.", planned)
	}
	stages, wall, unmeasured := runTotals(set.Runs)
	switch {
	case set.Sweep != nil && unmeasured == 0:
		p(" Total wall time %s (sum of the runs' wall_seconds in sweep.json).\n\n", duration(wall))
	case set.Sweep != nil && unmeasured < len(set.Runs):
		p(" Total wall time %s (sum of the runs' wall_seconds in sweep.json; %d runs trained before the sweep adopted them count their time in stages).\n\n", duration(wall), unmeasured)
	default:
		p(" Total time in training stages %s (sum of the runs' stage times in metrics.json; no wall times recorded).\n\n", duration(stages))
	}

	main, ablation := splitGroups(g.groups)
	if len(main) > 0 {
		resultsTable(&b, main, set.forgettingLimit())
	}
	if len(ablation) > 1 {
		p("Ablation of bicyc, L_bi and L_cyc on (✓) or off (✗):\n\n")
		ablationTable(&b, ablation)
	}
	for _, f := range snippetFigures(g) {
		path, err := rel(f.File)
		if err != nil {
			return "", err
		}
		f.File = path
		embed(&b, f)
	}
	path, err := rel("report.md")
	if err != nil {
		return "", err
	}
	p("Full report, per-run metrics and every figure: [%s](%s).\n", path, path)
	return strings.ReplaceAll(b.String(), "\n", newline), nil
}

// snippetFigures picks the README's two figures: TAg A_last after each
// task, and the per-step gain of bicyc over adagauss, else over finetune,
// else the accuracy matrix of the first bicyc run (of the first run without
// a bicyc run). Without a finished run there is no curve, and only the
// matrix is left.
func snippetFigures(g *generated) []Figure {
	var out []Figure
	if len(g.figs.curves) > 0 {
		out = append(out, g.figs.curves[0])
	}
	for _, over := range []sweep.Variant{{Method: config.MethodAdaGauss, Bi: true, Cyc: true}, {Method: config.MethodFinetune, Bi: true, Cyc: true}} {
		if i := slices.Index(g.figs.gainOver, over); i >= 0 {
			return append(out, g.figs.gains[i])
		}
	}
	for i, r := range g.set.Runs {
		if r.Variant().Method == config.MethodBicyc {
			return append(out, g.figs.matrices[i])
		}
	}
	return append(out, g.figs.matrices[0])
}

// plainArg matches the command-line arguments that need no shell quoting.
var plainArg = regexp.MustCompile(`^[A-Za-z0-9_./:=+@%-]+$`)

// shellQuote returns s as a POSIX shell word.
func shellQuote(s string) string {
	if plainArg.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
