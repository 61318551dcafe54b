package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"

	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/sweep"
)

// SizeCurve compares methods across training-set sizes: one sweep (or
// directory of runs) per size, each differing only in data.train_per_class.
type SizeCurve struct {
	// Sizes are the sweeps' data.train_per_class, ascending; 0 means all.
	Sizes []int
	// Dirs are the sweep directories, in the order of Sizes.
	Dirs []string
	// Variants are the methods found, in first-seen order.
	Variants []sweep.Variant
	// Groups[i][v] aggregates variant v at Sizes[i]; nil when absent.
	Groups [][]*Group
}

// NewSizeCurve loads every directory (see Load) and aggregates its
// finished runs. Directories must differ in data.train_per_class, and all
// runs of one directory must share it; otherwise it returns an error naming
// the directory.
func NewSizeCurve(dirs []string) (*SizeCurve, error) {
	type point struct {
		size   int
		dir    string
		groups []Group
	}
	var points []point
	for _, dir := range dirs {
		set, err := Load(dir)
		if err != nil {
			return nil, err
		}
		if len(set.Runs) == 0 {
			return nil, fmt.Errorf("report: %s: no run with a completed task", dir)
		}
		size := set.Runs[0].Config.Data.TrainPerClass
		for _, r := range set.Runs {
			if r.Config.Data.TrainPerClass != size {
				return nil, fmt.Errorf("report: %s: runs with data.train_per_class %d and %d", dir, size, r.Config.Data.TrainPerClass)
			}
		}
		if slices.ContainsFunc(points, func(p point) bool { return p.size == size }) {
			return nil, fmt.Errorf("report: %s: a second directory with data.train_per_class %d", dir, size)
		}
		groups, err := Aggregate(set.Runs)
		if err != nil {
			return nil, err
		}
		points = append(points, point{size, dir, groups})
	}
	// 0 (all images) sorts last.
	slices.SortFunc(points, func(a, b point) int { return sizeKey(a.size) - sizeKey(b.size) })
	c := &SizeCurve{}
	for _, p := range points {
		c.Sizes, c.Dirs = append(c.Sizes, p.size), append(c.Dirs, p.dir)
		for _, g := range p.groups {
			if !slices.Contains(c.Variants, g.Variant) {
				c.Variants = append(c.Variants, g.Variant)
			}
		}
	}
	for _, p := range points {
		row := make([]*Group, len(c.Variants))
		for i := range p.groups {
			row[slices.Index(c.Variants, p.groups[i].Variant)] = &p.groups[i]
		}
		c.Groups = append(c.Groups, row)
	}
	return c, nil
}

func sizeKey(size int) int {
	if size == 0 {
		return int(^uint(0) >> 1)
	}
	return size
}

func sizeLabel(size int) string {
	if size == 0 {
		return "all"
	}
	return fmt.Sprint(size)
}

// Markdown returns a table of TAg A_last, F_last and TAw A_last (mean ± std
// over seeds, %) for every size and method, and each run's TAg A_last.
func (c *SizeCurve) Markdown() string {
	var b strings.Builder
	b.WriteString("| training images per class | method | seeds | TAg A_last | TAg F_last | TAw A_last | TAg A_last per seed |\n|---|---|---|---|---|---|---|\n")
	for i, size := range c.Sizes {
		for j, v := range c.Variants {
			g := c.Groups[i][j]
			if g == nil {
				continue
			}
			var seeds []string
			for _, r := range g.Runs {
				seeds = append(seeds, oneDecimal(100*r.Summary.TAg.ALast))
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s |\n", sizeLabel(size), v, len(g.Runs),
				percent(g.TAg.ALast.Mean)+" ± "+oneDecimal(100*g.TAg.ALast.Std), percent(g.TAg.FLast.Mean)+" ± "+oneDecimal(100*g.TAg.FLast.Std),
				percent(g.TAw.ALast.Mean)+" ± "+oneDecimal(100*g.TAw.ALast.Std), strings.Join(seeds, ", "))
		}
	}
	return b.String()
}

// Figure returns TAg A_last against the training images per class, one
// line per method with a ±std band, as a PNG.
func (c *SizeCurve) Figure() ([]byte, error) {
	var ss []series
	book := newStyleBook(c.Variants)
	for j, v := range c.Variants {
		// A method runs up to the last size it has; a missing size in
		// between is drawn as the line between its neighbours.
		var steps []Stat
		last := 0
		for i := range c.Sizes {
			if g := c.Groups[i][j]; g != nil {
				steps, last = append(steps, g.TAg.ALast), i+1
			} else {
				steps = append(steps, Stat{Mean: math.NaN()})
			}
		}
		s := percentSeries(v, book.of(v), steps[:last])
		s.mean, s.std = fillGaps(s.mean), fillGaps(s.std)
		for s.skip < len(s.mean) && math.IsNaN(s.mean[s.skip]) {
			s.skip++
		}
		ss = append(ss, s)
	}
	p, err := curvesPanel("TAg A_last after the last task (mean ± std over seeds)", "A_last (%)", ss, false)
	if err != nil {
		return nil, err
	}
	p.X.Label.Text = "training images per class"
	ticks := make(plot.ConstantTicks, len(c.Sizes))
	for i, size := range c.Sizes {
		ticks[i] = plot.Tick{Value: float64(i + 1), Label: sizeLabel(size)}
	}
	p.X.Tick.Marker = ticks
	p.Legend.Top, p.Legend.Left = false, true
	p.Legend.XOffs, p.Legend.YOffs = legendOffset(false, true)
	return renderPNG(720, 480, func(dc draw.Canvas) { p.Draw(dc) })
}

// fillGaps replaces each NaN between two numbers by linear interpolation;
// leading NaNs stay (the caller skips them).
func fillGaps(v []float64) []float64 {
	out := slices.Clone(v)
	for i := range out {
		if !math.IsNaN(out[i]) {
			continue
		}
		lo, hi := i-1, i+1
		for hi < len(out) && math.IsNaN(out[hi]) {
			hi++
		}
		if lo >= 0 && hi < len(out) {
			out[i] = out[lo] + (out[hi]-out[lo])*float64(i-lo)/float64(hi-lo)
		}
	}
	return out
}

// SizeFigureFile is the figure WriteSizeCurve writes under dest/figures.
const SizeFigureFile = "a-last-by-size.png"

// WriteSizeCurve writes dest/sizes.md (the table, the sweeps it came from)
// and dest/figures/SizeFigureFile, each replaced whole.
func WriteSizeCurve(c *SizeCurve, dest string) error {
	png, err := c.Figure()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dest, "figures"), 0o755); err != nil {
		return err
	}
	if err := durable.WriteFile(filepath.Join(dest, "figures", SizeFigureFile), png); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# TAg A_last against training images per class\n\n")
	b.WriteString(c.Markdown())
	fmt.Fprintf(&b, "\n![TAg A_last against training images per class](figures/%s)\n\nSweeps:\n\n", SizeFigureFile)
	for i, dir := range c.Dirs {
		fmt.Fprintf(&b, "- %s images per class: `%s`\n", sizeLabel(c.Sizes[i]), filepath.ToSlash(dir))
	}
	return durable.WriteFile(filepath.Join(dest, "sizes.md"), []byte(b.String()))
}
