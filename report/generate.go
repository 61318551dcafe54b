package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/sweep"
)

// Options are the settings of Generate that do not come from the runs.
type Options struct {
	// Now is the report's date; the zero time means time.Now().
	Now time.Time
	// Machine is the computer named in the report; nil means ThisMachine().
	Machine *Machine
}

// Result is what Generate wrote.
type Result struct {
	// Markdown is the path of report.md; Summary the path of summary.json.
	Markdown, Summary string
	// Figures are the PNGs, in the order report.md shows them.
	Figures []Figure
	// Groups are the aggregated variants.
	Groups []Group
}

// Generate reads the run, sweep or directory of runs in dir (see Load) and
// writes into dir:
//
//	report.md      date, machine, configuration, the paper's tables
//	               (A_last, A_inc, F_last in %, mean +- std over seeds, TAg
//	               and TAw; the L_bi x L_cyc ablation grid), per-step
//	               A_last, wall times, and the figures embedded
//	summary.json   the same numbers, machine-readable
//	figures/*.png  the TAg accuracy matrix of every run, the per-step gain
//	               of bicyc over every other method (paper Figure 3), A_last
//	               per step (mean and +-std band over seeds), and drift
//	               diagnostics per step when the runs recorded them
//
// Files are replaced atomically. Generate is safe to run while a sweep is
// training: it reports the finished runs and lists the others.
func Generate(dir string, opts Options) (*Result, error) {
	g, err := generate(dir, opts)
	if err != nil {
		return nil, err
	}
	return g.res, nil
}

// generated is everything a report was written from, for Publish.
type generated struct {
	set    *Set
	groups []Group
	figs   figureSet
	opts   Options // with Now and Machine filled in
	res    *Result
}

func generate(dir string, opts Options) (*generated, error) {
	set, err := Load(dir)
	if err != nil {
		return nil, err
	}
	groups, err := Aggregate(set.Runs)
	if err != nil {
		return nil, err
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	if opts.Machine == nil {
		m := ThisMachine()
		opts.Machine = &m
	}
	res := &Result{
		Markdown: filepath.Join(dir, "report.md"),
		Summary:  filepath.Join(dir, "summary.json"),
		Groups:   groups,
	}
	figs, err := writeFigures(dir, set, groups)
	if err != nil {
		return nil, err
	}
	res.Figures = figs.all()
	if err := durable.WriteJSON(res.Summary, newSummaryFile(set, groups, figs, opts)); err != nil {
		return nil, err
	}
	if err := durable.WriteFile(res.Markdown, []byte(markdown(set, groups, figs, opts))); err != nil {
		return nil, err
	}
	return &generated{set: set, groups: groups, figs: figs, opts: opts, res: res}, nil
}

// figureSet holds the figures of a report by section.
type figureSet struct {
	matrices []Figure // one per run, in set order
	gains    []Figure
	gainOver []sweep.Variant // the variant each gain is over, parallel to gains
	curves   []Figure        // A_last per step: TAg, TAw, then the ablation
	drift    *Figure
}

func (f figureSet) all() []Figure {
	out := append(append([]Figure(nil), f.curves...), f.gains...)
	if f.drift != nil {
		out = append(out, *f.drift)
	}
	return append(out, f.matrices...)
}

// Figure sizes in pixels.
const (
	curveWidth, curveHeight = 900, 560
	driftWidth, driftHeight = 1200, 900
)

// figureDir writes the PNG figures of a report into <dir>/figures.
type figureDir string

// save writes png as figures/name and returns its Figure record.
func (d figureDir) save(name, title string, png []byte, w, h int) (Figure, error) {
	f := Figure{File: filepath.ToSlash(filepath.Join("figures", name)), Title: strings.ReplaceAll(title, "\n", " "), Width: w, Height: h}
	return f, durable.WriteFile(filepath.Join(string(d), f.File), png)
}

func writeFigures(dir string, set *Set, groups []Group) (figureSet, error) {
	var fs figureSet
	if err := os.MkdirAll(filepath.Join(dir, "figures"), 0o755); err != nil {
		return fs, err
	}
	d := figureDir(dir)
	var err error
	if fs.matrices, err = d.matrices(set); err != nil {
		return fs, err
	}
	main, ablation := splitGroups(groups)
	if fs.gains, fs.gainOver, err = d.gains(main); err != nil {
		return fs, err
	}
	var vs []sweep.Variant
	for _, g := range groups {
		vs = append(vs, g.Variant)
	}
	book := newStyleBook(vs)
	if fs.curves, err = d.curves(main, ablation, book, set.Runs[0].Config); err != nil {
		return fs, err
	}
	fs.drift, err = d.drift(groups, book)
	return fs, err
}

// matrices draws the TAg accuracy matrix of every run.
func (d figureDir) matrices(set *Set) ([]Figure, error) {
	var figs []Figure
	for _, r := range set.Runs {
		title := fmt.Sprintf("TAg accuracy (%%)\n%s, seed %d", r.Variant(), r.Summary.Seed)
		png, w, h, err := heatmap(title, "accuracy (%)", runMatrix(r), accuracyColors())
		if err != nil {
			return figs, err
		}
		f, err := d.save("acc-tag-"+r.Name+".png", title, png, w, h)
		if err != nil {
			return figs, err
		}
		figs = append(figs, f)
	}
	return figs, nil
}

// gains draws the per-step gain of full bicyc over every other variant of
// the main table, and returns the figures with the variants they compare
// against.
func (d figureDir) gains(main []*Group) (figs []Figure, over []sweep.Variant, err error) {
	full := fullBicyc(main)
	if full == nil {
		return nil, nil, nil
	}
	for _, g := range main {
		if g == full {
			continue
		}
		gain, err := GainOf(full, g)
		if err != nil {
			return figs, over, err
		}
		title := fmt.Sprintf("TAg gain of bicyc over %s\n(percentage points, %s)", g.Variant, seedsText(full, g))
		png, w, h, err := heatmap(title, "gain (pp)", gain.Delta, gainColors(gain.Delta))
		if err != nil {
			return figs, over, err
		}
		f, err := d.save("gain-bicyc-vs-"+strings.TrimSuffix(g.Variant.RunName(0), "-s0")+".png", title, png, w, h)
		if err != nil {
			return figs, over, err
		}
		figs = append(figs, f)
		over = append(over, g.Variant)
	}
	return figs, over, nil
}

// curves draws A_last after each task for the main table (TAg and TAw) and
// for the ablation grid when it has more than one cell, each variant in its
// style from book and each figure captioned with its seeds and the budget
// of cfg (one run's configuration: the runs of a report share it).
func (d figureDir) curves(main, ablation []*Group, book styleBook, cfg config.Config) ([]Figure, error) {
	var figs []Figure
	draw := func(name, title string, gs []*Group, ss []series) error {
		caption := seedsCaption(gs) + "\n" + budgetText(cfg)
		png, w, h, err := curves(title, "A_last (%)", caption, ss, curveWidth, curveHeight, true, false)
		if err != nil {
			return err
		}
		f, err := d.save(name, title, png, w, h)
		if err != nil {
			return err
		}
		f.Caption = strings.ReplaceAll(caption, "\n", " ")
		figs = append(figs, f)
		return nil
	}
	if len(main) > 0 {
		for _, kind := range []string{"TAg", "TAw"} {
			var ss []series
			for _, g := range main {
				ms := g.TAg
				if kind == "TAw" {
					ms = g.TAw
				}
				ss = append(ss, percentSeries(g.Variant, book.of(g.Variant), ms.Steps))
			}
			title := fmt.Sprintf("%s accuracy A_last after each task (mean ± std over seeds)", kind)
			if err := draw("a-last-"+strings.ToLower(kind)+".png", title, main, ss); err != nil {
				return figs, err
			}
		}
	}
	if len(ablation) > 1 {
		var ss []series
		for _, g := range ablation {
			ss = append(ss, percentSeries(g.Variant, book.of(g.Variant), g.TAg.Steps))
		}
		if err := draw("a-last-ablation.png", "Ablation of bicyc: TAg A_last after each task (mean ± std over seeds)", ablation, ss); err != nil {
			return figs, err
		}
	}
	return figs, nil
}

// drift draws the drift diagnostics of the groups that recorded them; nil
// when none did.
func (d figureDir) drift(groups []Group, book styleBook) (*Figure, error) {
	var withDrift []*Group
	for i := range groups {
		if groups[i].Drift != nil {
			withDrift = append(withDrift, &groups[i])
		}
	}
	if len(withDrift) == 0 {
		return nil, nil
	}
	png, err := driftFigure(withDrift, book)
	if err != nil {
		return nil, err
	}
	f, err := d.save("drift.png", "Drift of the first task's classes and AD-% after each task", png, driftWidth, driftHeight)
	if err != nil {
		return nil, err
	}
	return &f, nil
}

// splitGroups returns the groups of the main results table (the variants
// without an ablated loss) and the bicyc groups of the ablation grid (named
// variants left out), both in the order of groups.
func splitGroups(groups []Group) (main, ablation []*Group) {
	for i := range groups {
		g := &groups[i]
		if !g.Variant.Ablated() {
			main = append(main, g)
		}
		if g.Variant.Method == config.MethodBicyc && g.Variant.Name == "" {
			ablation = append(ablation, g)
		}
	}
	return main, ablation
}

// fullBicyc returns the plain bicyc group (both losses on, no named
// variant), nil if there is none.
func fullBicyc(main []*Group) *Group {
	for _, g := range main {
		if g.Variant.Method == config.MethodBicyc && g.Variant.Name == "" && !g.Variant.Ablated() {
			return g
		}
	}
	return nil
}

// runMatrix is a run's TAg accuracy matrix in percent, rows of steps not
// yet recorded all NaN.
func runMatrix(r *Run) [][]float64 {
	m := r.Summary.MatrixTAg
	out := make([][]float64, m.Tasks())
	for t := range out {
		out[t] = make([]float64, t+1)
		for u := range out[t] {
			out[t][u] = 100 * m.At(t, u)
		}
	}
	return out
}

func percentSeries(v sweep.Variant, style lineStyle, steps []Stat) series {
	s := series{label: v.String(), style: style, lo: 0, hi: 100}
	for _, st := range steps {
		s.mean = append(s.mean, 100*st.Mean)
		s.std = append(s.std, 100*st.Std)
	}
	return s
}

func driftFigure(groups []*Group, book styleBook) ([]byte, error) {
	type panel struct {
		title, unit string
		pick        func(*DriftStats) []Stat
		skip        int
		hi          float64
		log         bool
	}
	specs := []panel{
		{"mu-L2: stored vs current class means", "||mu_stored - mu_test|| (mean over classes)", func(d *DriftStats) []Stat { return d.MeanL2 }, 0, math.Inf(1), false},
		{"Sigma-Frobenius: stored vs current covariances", "||Sigma_stored - Sigma_test||_F", func(d *DriftStats) []Stat { return d.CovFrobenius }, 0, math.Inf(1), false},
		{"Symmetric KL: stored vs current Gaussians", "symmetric KL (log scale)", func(d *DriftStats) []Stat { return d.SymmetricKL }, 0, math.Inf(1), true},
		{"AD-%: singular values of A_hat D_hat in [0.9, 1.1]", "AD-% (%)", func(d *DriftStats) []Stat { return d.ADPercent }, 1, 100, false},
	}
	plots := [][]*plot.Plot{make([]*plot.Plot, 2), make([]*plot.Plot, 2)}
	for i, sp := range specs {
		var ss []series
		for _, g := range groups {
			s := series{label: g.Variant.String(), style: book.of(g.Variant), skip: sp.skip, lo: 0, hi: sp.hi}
			for _, st := range sp.pick(g.Drift) {
				s.mean = append(s.mean, st.Mean)
				s.std = append(s.std, st.Std)
			}
			ss = append(ss, s)
		}
		p, err := curvesPanel(sp.title, sp.unit, ss, sp.log)
		if err != nil {
			return nil, err
		}
		p.Title.TextStyle.Font.Size = labelSize
		if i == 0 {
			// One legend serves all panels; mu-L2 starts near 0, so
			// its top left corner is free.
			p.Legend.Top, p.Legend.Left = true, true
			p.Legend.XOffs, p.Legend.YOffs = legendOffset(true, true)
		} else {
			p.Legend = plot.NewLegend()
		}
		plots[i/2][i%2] = p
	}
	return panels(plots, driftWidth, driftHeight)
}

// seedsText says over how many seeds two groups were averaged.
func seedsText(a, b *Group) string {
	if len(a.Seeds) == len(b.Seeds) {
		return plural(len(a.Seeds), "seed")
	}
	return fmt.Sprintf("%s vs %s", plural(len(a.Seeds), "seed"), plural(len(b.Seeds), "seed"))
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// percent formats a fraction as a percentage with one decimal, the
// paper's precision.
func percent(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return oneDecimal(100 * v)
}

// oneDecimal prints v with one decimal, and a value that rounds to zero as
// "0.0", never "-0.0".
func oneDecimal(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if s == "-0.0" {
		return "0.0"
	}
	return s
}
