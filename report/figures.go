package report

import (
	"bytes"
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Figure is a PNG written by the report.
type Figure struct {
	// File is the PNG's path relative to the report directory.
	File  string `json:"file"`
	Title string `json:"title"`
	// Caption is the line under the figure (seeds and budget), "" for
	// none.
	Caption string `json:"caption,omitempty"`
	// Width and Height are the image size in pixels.
	Width  int `json:"width"`
	Height int `json:"height"`
}

// dpi is the resolution of every figure: 1 point of font size is
// dpi/72 pixels.
const dpi = 100

// Font sizes in points.
const (
	titleSize  = 14
	labelSize  = 12
	tickSize   = 11
	legendSize = 11
)

// renderPNG draws a figure of w x h pixels with paint and returns the PNG.
func renderPNG(w, h int, paint func(draw.Canvas)) ([]byte, error) {
	c := vgimg.NewWith(
		vgimg.UseWH(vg.Length(w)*vg.Inch/dpi, vg.Length(h)*vg.Inch/dpi),
		vgimg.UseDPI(dpi),
		vgimg.UseBackgroundColor(color.White),
	)
	paint(draw.New(c))
	var b bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// newPlot returns a plot with the report's font sizes.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = titleSize
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = labelSize
		a.Tick.Label.Font.Size = tickSize
	}
	p.Legend.TextStyle.Font.Size = legendSize
	return p
}

// taskTicks labels positions 0..n-1 as T1..Tn, or every k-th of them when n
// is large, so labels never overlap.
func taskTicks(n int, label func(i int) string) plot.ConstantTicks {
	step := max(1, (n+9)/10)
	var ticks []plot.Tick
	for i := range n {
		l := ""
		if i%step == 0 || i == n-1 {
			l = label(i)
		}
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: l})
	}
	return ticks
}

// triangle is a lower-triangular matrix as a heat-map grid: column u is the
// task evaluated, row r shows step n-1-r so that step 1 is at the top, as
// in the paper's figures. Cells above the diagonal are NaN.
type triangle [][]float64

func (m triangle) Dims() (c, r int) { return len(m), len(m) }
func (m triangle) Z(c, r int) float64 {
	t := len(m) - 1 - r
	if c > t {
		return math.NaN()
	}
	return m[t][c]
}
func (m triangle) X(c int) float64 { return float64(c) }
func (m triangle) Y(r int) float64 { return float64(r) }

// heatmapSize is the pixel size of a heat map of n tasks: cells of 80
// pixels up to 10 tasks, 48 beyond, plus room for the two-line title, the
// axes and the color bar, and at least 520 x 440 so titles fit.
func heatmapSize(n int) (w, h int) {
	cell := 80
	if n > 10 {
		cell = 48
	}
	return max(520, 220+cell*n), max(440, 170+cell*n)
}

// heatmap renders m (values in the units of the color map, percent or
// percentage points) as a lower-triangular heat map with each cell's value
// written in it and a color bar titled unit.
func heatmap(title, unit string, m [][]float64, cm palette.ColorMap) (png []byte, w, h int, err error) {
	n := len(m)
	w, h = heatmapSize(n)
	p := newPlot(title, "accuracy on task", "after training task")
	pal := cm.Palette(256)
	hm := plotter.NewHeatMap(triangle(m), pal)
	hm.Min, hm.Max = cm.Min(), cm.Max()
	hm.NaN = color.White
	hm.Underflow, hm.Overflow = pal.Colors()[0], pal.Colors()[len(pal.Colors())-1]
	p.Add(hm)
	var labels plotter.XYLabels
	var styles []text.Style
	cellFont := font.Length(tickSize)
	if n > 10 {
		cellFont = 8
	}
	for t := range n {
		for u := 0; u <= t; u++ {
			if math.IsNaN(m[t][u]) {
				continue
			}
			labels.XYs = append(labels.XYs, plotter.XY{X: float64(u), Y: float64(n - 1 - t)})
			labels.Labels = append(labels.Labels, oneDecimal(m[t][u]))
			c, cerr := cm.At(math.Min(math.Max(m[t][u], cm.Min()), cm.Max()))
			if cerr != nil {
				return nil, 0, 0, fmt.Errorf("report: heat map %q: %w", title, cerr)
			}
			styles = append(styles, text.Style{
				Color:   inkOn(c),
				Font:    font.From(plotter.DefaultFont, cellFont),
				XAlign:  draw.XCenter,
				YAlign:  draw.YCenter,
				Handler: plot.DefaultTextHandler,
			})
		}
	}
	lab, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, 0, 0, err
	}
	lab.TextStyle = styles
	p.Add(lab)
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
	p.X.Padding, p.Y.Padding = 0, 0
	p.X.Tick.Marker = taskTicks(n, func(i int) string { return fmt.Sprintf("T%d", i+1) })
	p.Y.Tick.Marker = taskTicks(n, func(i int) string { return fmt.Sprintf("T%d", n-i) })

	bar := newPlot("", "", unit)
	bar.HideX()
	bar.Y.Padding = 0
	bar.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true})

	// The color bar gets a strip on the right, spanning the data area of
	// the heat map vertically; of its width, about 24 pixels are the bar
	// and the rest its axis.
	barWidth := vg.Length(100) * vg.Inch / dpi
	png, err = renderPNG(w, h, func(dc draw.Canvas) {
		left := draw.Crop(dc, 0, -barWidth, 0, 0)
		p.Draw(left)
		data := p.DataCanvas(left)
		right := draw.Crop(dc, dc.Max.X-dc.Min.X-barWidth+vg.Points(6), -vg.Points(12), data.Min.Y-dc.Min.Y, data.Max.Y-dc.Max.Y)
		bar.Draw(right)
	})
	return png, w, h, err
}

// inkOn returns black or white, whichever reads better on background c
// (relative luminance above or below one half).
func inkOn(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	lum := (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(b)) / 0xffff
	if lum > 0.5 {
		return color.Black
	}
	return color.White
}

// accuracyColors is a perceptually ordered map from dark purple (0 %) to
// yellow (100 %), the control points of matplotlib's viridis.
func accuracyColors() palette.ColorMap {
	cm, err := moreland.NewLuminance([]color.Color{
		color.NRGBA{0x44, 0x01, 0x54, 0xff},
		color.NRGBA{0x3b, 0x52, 0x8b, 0xff},
		color.NRGBA{0x21, 0x91, 0x8c, 0xff},
		color.NRGBA{0x5e, 0xc9, 0x62, 0xff},
		color.NRGBA{0xfd, 0xe7, 0x25, 0xff},
	})
	if err != nil {
		panic("report: viridis control points: " + err.Error())
	}
	cm.SetMin(0)
	cm.SetMax(100)
	return cm
}

// gainColors is a diverging blue (negative) - white - red (positive) map
// symmetric about 0, wide enough for every value of m and at least +-1.
func gainColors(m [][]float64) palette.ColorMap {
	span := 1.0
	for _, row := range m {
		for _, v := range row {
			span = math.Max(span, math.Abs(v))
		}
	}
	span = math.Ceil(span)
	cm := moreland.SmoothBlueRed()
	cm.SetMin(-span)
	cm.SetMax(span)
	return cm
}

// series is one line of a curve figure: a mean with a +-std band.
type series struct {
	label     string
	mean, std []float64
	// skip leaves out the first skip steps (AD-% has no value at step 1).
	skip int
	// lo and hi bound the band: the quantities plotted cannot leave
	// [lo, hi] even where mean +- std does.
	lo, hi float64
	style  lineStyle
}

// final is the series' mean after its last step, NaN when it has none.
func (s series) final() float64 {
	if len(s.mean) <= s.skip {
		return math.NaN()
	}
	return s.mean[len(s.mean)-1]
}

// byFinal returns ss sorted by final value, highest first (NaN last, ties
// in the given order): the legend lists the lines in the order their ends
// stand.
func byFinal(ss []series) []series {
	out := slices.Clone(ss)
	slices.SortStableFunc(out, func(a, b series) int {
		fa, fb := a.final(), b.final()
		switch {
		case math.IsNaN(fa) || math.IsNaN(fb):
			return cmp.Compare(boolInt(math.IsNaN(fa)), boolInt(math.IsNaN(fb)))
		}
		return cmp.Compare(fb, fa)
	})
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// curvesPanel returns a plot of the series against the step (1-based) with
// a translucent mean +- std band around each line, each drawn in its own
// style, the legend ordered by final value (byFinal). With log set the y
// axis is logarithmic and bands are clipped to the smallest positive mean
// / 10.
func curvesPanel(title, yLabel string, ss []series, log bool) (*plot.Plot, error) {
	p := newPlot(title, "after training task", yLabel)
	ss = byFinal(ss)
	steps := 0
	floor := math.Inf(1)
	for _, s := range ss {
		steps = max(steps, len(s.mean))
		for _, v := range s.mean[s.skip:] {
			if v > 0 {
				floor = math.Min(floor, v/10)
			}
		}
	}
	for _, s := range ss {
		n := len(s.mean) - s.skip
		if n <= 0 {
			continue
		}
		line, band := make(plotter.XYs, n), make(plotter.XYs, 0, 2*n)
		for i := range n {
			t := i + s.skip
			line[i] = plotter.XY{X: float64(t + 1), Y: clampLog(s.mean[t], floor, log)}
		}
		hasBand := false
		for i := range n {
			t := i + s.skip
			band = append(band, plotter.XY{X: float64(t + 1), Y: clampLog(math.Min(s.mean[t]+s.std[t], s.hi), floor, log)})
			hasBand = hasBand || s.std[t] > 0
		}
		for i := n - 1; i >= 0; i-- {
			t := i + s.skip
			band = append(band, plotter.XY{X: float64(t + 1), Y: clampLog(math.Max(s.mean[t]-s.std[t], s.lo), floor, log)})
		}
		if hasBand {
			poly, err := plotter.NewPolygon(band)
			if err != nil {
				return nil, err
			}
			r, g, b, _ := s.style.color.RGBA()
			poly.Color = color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), bandAlpha(len(ss))}
			poly.LineStyle.Width = 0
			p.Add(poly)
		}
		l, pts, err := plotter.NewLinePoints(line)
		if err != nil {
			return nil, err
		}
		l.Color, pts.Color = s.style.color, s.style.color
		l.Width = vg.Points(2)
		l.Dashes = s.style.dash
		pts.Shape = s.style.marker
		pts.Radius = vg.Points(3.5)
		p.Add(l, pts)
		p.Legend.Add(s.label, l, pts)
	}
	// Thumbnails long enough to show each variant's dash pattern.
	p.Legend.ThumbnailWidth = vg.Points(36)
	p.X.Tick.Marker = taskTicks(steps, func(i int) string { return strconv.Itoa(i + 1) })
	// Shift ticks to the 1-based steps the lines use.
	ticks := p.X.Tick.Marker.(plot.ConstantTicks)
	for i := range ticks {
		ticks[i].Value++
	}
	p.X.Min, p.X.Max = 0.8, float64(steps)+0.2
	p.Y.Tick.Marker = linearTicks{}
	if log {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// linearTicks labels minLabels (default four) to about ten round values (1, 2 or 5 times a power of
// ten apart) with as few digits as they need; plot.DefaultTicks can pick
// steps such as 6 and prints "100.00" on a percentage axis.
//
// minLabels is the fewest labels wanted, 0 meaning four; a narrow panel
// asks for fewer so that its labels do not run into each other.
type linearTicks struct{ minLabels int }

func (lt linearTicks) Ticks(lo, hi float64) []plot.Tick {
	want := lt.minLabels
	if want == 0 {
		want = 4
	}
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return nil
	}
	// The largest step of 5, 2 or 1 times a power of ten (below the range's
	// own power of ten) that labels at least four values.
	top := int(math.Ceil(math.Log10(hi - lo)))
	var step float64
	var exp int
	for i := 0; ; i++ {
		exp = top - 1 - i/3
		step = []float64{5, 2, 1}[i%3] * math.Pow(10, float64(exp))
		if math.Floor(hi/step)-math.Ceil(lo/step)+1 >= float64(want) {
			break
		}
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi; i++ {
		v := i * step
		label := strconv.FormatFloat(v, 'f', max(0, -exp), 64)
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
		if mid := v + step/2; mid <= hi {
			ticks = append(ticks, plot.Tick{Value: mid})
		}
	}
	return ticks
}

// logTicks labels a log axis at 1, 2 and 5 times the powers of ten, with
// unlabelled ticks at the other integer multiples: plot.LogTicks labels
// powers of ten only, which leaves a single label on a range such as the
// symmetric KL's 10-700.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || math.IsInf(hi, 0) {
		return nil
	}
	var ticks []plot.Tick
	for k := math.Floor(math.Log10(lo)); math.Pow(10, k) <= hi; k++ {
		p := math.Pow(10, k)
		for m := 1.0; m < 10; m++ {
			v := m * p
			if v < lo || v > hi {
				continue
			}
			label := ""
			if m == 1 || m == 2 || m == 5 {
				label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label})
		}
	}
	return ticks
}

func clampLog(v, floor float64, log bool) float64 {
	if log && !(v > floor) {
		return floor
	}
	return v
}

// bandAlpha is the opacity of each of n std bands: a quarter for up to
// three, less beyond, so that overlapping bands do not hide the lines.
func bandAlpha(n int) uint8 {
	return uint8(0x40 * 3 / max(n, 3))
}

// crowdedGap is the distance, in the series' units (percentage points for
// accuracies), under which two final values count as overlapping lines.
const crowdedGap = 1.0

// zoomWidth is the width in pixels of the panel curves adds beside the
// lines when some of them end within crowdedGap of each other.
const zoomWidth = 440

// curves renders one curves panel with the legend at the given corner and
// caption (the seeds and budget) as a line under it. When two series end
// within crowdedGap of each other their lines cannot be read apart on the
// full range, so a zoomed panel of the last step (finalPanel) of those
// series is added on the right, making the PNG zoomWidth wider. It returns the PNG and its
// size.
func curves(title, yLabel, caption string, ss []series, w, h int, top, left bool) (png []byte, width, height int, err error) {
	p, err := curvesPanel(title, yLabel, ss, false)
	if err != nil {
		return nil, 0, 0, err
	}
	p.Legend.Top, p.Legend.Left = top, left
	p.Legend.XOffs, p.Legend.YOffs = legendOffset(top, left)
	var zoom *plot.Plot
	if close := crowded(ss, crowdedGap); len(close) > 0 {
		if zoom, err = finalPanel(close, yLabel); err != nil {
			return nil, 0, 0, err
		}
		w += zoomWidth
	}
	png, err = renderPNG(w, h, func(dc draw.Canvas) {
		dc = drawCaption(dc, caption)
		if zoom == nil {
			p.Draw(dc)
			return
		}
		zw := vg.Length(zoomWidth) * vg.Inch / dpi
		p.Draw(draw.Crop(dc, 0, -zw, 0, 0))
		zoom.Draw(draw.Crop(dc, dc.Max.X-dc.Min.X-zw+vg.Points(12), 0, 0, 0))
	})
	return png, w, h, err
}

// crowded returns the series that end within gap of another one, in the
// order of ss: the lines a full-range axis cannot tell apart.
func crowded(ss []series, gap float64) []series {
	var out []series
	for i, s := range ss {
		for j, o := range ss {
			if i != j && math.Abs(s.final()-o.final()) < gap {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// finalPanel zooms in on the last step: one row per series, in legend
// order, its final mean drawn with its marker and a ± std bar on an x axis
// that spans only those values, and the numbers in the row's label, so
// the panel doubles as a table.
func finalPanel(ss []series, unit string) (*plot.Plot, error) {
	ss = byFinal(ss)
	steps := 0
	for _, s := range ss {
		steps = max(steps, len(s.mean))
	}
	p := newPlot(fmt.Sprintf("After task %d, zoomed: ends within %s", steps, plural(int(crowdedGap), "point")), unit, "")
	lo, hi := math.Inf(1), math.Inf(-1)
	var ticks plot.ConstantTicks
	for i, s := range ss {
		f := s.final()
		if math.IsNaN(f) {
			continue
		}
		sd := s.std[len(s.std)-1]
		lo, hi = math.Min(lo, math.Max(f-sd, s.lo)), math.Max(hi, math.Min(f+sd, s.hi))
		y := float64(len(ss) - 1 - i)
		pt := errorPoint{plotter.XYs{{X: f, Y: y}}, plotter.XErrors{{Low: -sd, High: sd}}}
		bars, err := plotter.NewXErrorBars(pt)
		if err != nil {
			return nil, err
		}
		bars.Color = s.style.color
		bars.Width = vg.Points(1.5)
		sc, err := plotter.NewScatter(pt.XYs)
		if err != nil {
			return nil, err
		}
		sc.Color, sc.Shape, sc.Radius = s.style.color, s.style.marker, vg.Points(4.5)
		p.Add(bars, sc)
		label := fmt.Sprintf("%s  %s", s.label, oneDecimal(f))
		if sd > 0 {
			label += " ± " + oneDecimal(sd)
		}
		ticks = append(ticks, plot.Tick{Value: y, Label: label})
	}
	pad := math.Max((hi-lo)*0.08, 0.1)
	p.X.Min, p.X.Max = lo-pad, hi+pad
	p.X.Tick.Marker = linearTicks{minLabels: 3}
	p.Y.Min, p.Y.Max = -0.6, float64(len(ss))-0.4
	p.Y.Tick.Marker = ticks
	p.Title.TextStyle.Font.Size = labelSize
	p.Add(plotter.NewGrid())
	return p, nil
}

// errorPoint is the point and the x error bar of one row of finalPanel.
type errorPoint struct {
	plotter.XYs
	plotter.XErrors
}

// captionSize is the font size in points of the line under a figure.
const captionSize = 10

// drawCaption writes caption along the bottom of dc and returns the rest
// of the canvas; "" leaves dc whole.
func drawCaption(dc draw.Canvas, caption string) draw.Canvas {
	if caption == "" {
		return dc
	}
	sty := text.Style{
		Color:   color.Gray{0x40},
		Font:    font.From(plotter.DefaultFont, captionSize),
		XAlign:  draw.XLeft,
		YAlign:  draw.YBottom,
		Handler: plot.DefaultTextHandler,
	}
	pad := vg.Points(6)
	dc.FillText(sty, vg.Point{X: dc.Min.X + pad, Y: dc.Min.Y + pad}, caption)
	return draw.Crop(dc, 0, 0, sty.Height(caption)+2*pad, 0)
}

// legendOffset moves a legend off the axis lines into the data area.
func legendOffset(top, left bool) (x, y vg.Length) {
	x, y = -vg.Points(8), vg.Points(8)
	if left {
		x = vg.Points(8)
	}
	if top {
		y = -vg.Points(8)
	}
	return x, y
}

// panels renders plots in a rows x cols grid with aligned axes.
func panels(plots [][]*plot.Plot, w, h int) ([]byte, error) {
	return renderPNG(w, h, func(dc draw.Canvas) {
		tiles := draw.Tiles{
			Rows: len(plots), Cols: len(plots[0]),
			PadX: vg.Points(24), PadY: vg.Points(18),
			PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(12),
		}
		canvases := plot.Align(plots, tiles, dc)
		for i := range plots {
			for j, p := range plots[i] {
				if p != nil {
					p.Draw(canvases[i][j])
				}
			}
		}
	})
}
