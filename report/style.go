package report

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/sweep"
)

// lineStyle is how one variant is drawn in every figure of a report: the
// colour of its method, and a dash and marker that tell apart the
// variants sharing that method (bicyc, bicyc+cal, bicyc+flip, the
// ablations of bicyc...).
type lineStyle struct {
	color  color.Color
	dash   []vg.Length
	marker draw.GlyphDrawer
}

// key is the style's identity as a test compares it: two series with the
// same key cannot be told apart.
func (s lineStyle) key() string {
	r, g, b, a := s.color.RGBA()
	return fmt.Sprintf("#%04x%04x%04x%04x %v %T", r, g, b, a, s.dash, s.marker)
}

// variantDashes and variantMarkers are drawn in this order for the first,
// second, ... variant of a method: the plain method is solid with filled
// circles. Filled and open glyphs alternate so that neighbours differ in
// print too.
var (
	variantDashes = [][]vg.Length{
		nil,
		{vg.Points(7), vg.Points(3)},
		{vg.Points(2), vg.Points(2)},
		{vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)},
		{vg.Points(14), vg.Points(4)},
	}
	variantMarkers = []draw.GlyphDrawer{
		draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.BoxGlyph{},
		draw.RingGlyph{}, draw.PyramidGlyph{}, draw.SquareGlyph{},
		draw.CrossGlyph{}, draw.PlusGlyph{},
	}
)

// styleBook maps each variant of a report to its lineStyle, so a variant
// looks the same in every figure.
type styleBook map[sweep.Variant]lineStyle

// newStyleBook gives the k-th variant of each method (counted in the
// order of vs, repeats ignored) dash k mod 5 and marker (k mod 5 + k div 5)
// mod 8: up to 40 variants of one method, no two share a (colour, dash,
// marker).
func newStyleBook(vs []sweep.Variant) styleBook {
	book := styleBook{}
	perMethod := map[config.Method]int{}
	for _, v := range vs {
		if _, seen := book[v]; seen {
			continue
		}
		k := perMethod[v.Method]
		perMethod[v.Method]++
		nd := len(variantDashes)
		book[v] = lineStyle{
			color:  variantColor(v),
			dash:   variantDashes[k%nd],
			marker: variantMarkers[(k%nd+k/nd)%len(variantMarkers)],
		}
	}
	return book
}

// of returns v's style; a variant the book does not know is drawn as its
// method's plain line.
func (b styleBook) of(v sweep.Variant) lineStyle {
	if s, ok := b[v]; ok {
		return s
	}
	return lineStyle{color: variantColor(v), marker: variantMarkers[0]}
}

// variantColor gives every method a fixed colour across figures: bicyc
// red, adagauss blue, finetune gray, any other brown; bicyc's loss
// ablations keep the colours they had before variants existed: green
// without L_bi, orange without L_cyc, purple without both.
func variantColor(v sweep.Variant) color.Color {
	switch {
	case v.Method == config.MethodAdaGauss:
		return color.NRGBA{0x1f, 0x77, 0xb4, 0xff}
	case v.Method == config.MethodFinetune:
		return color.NRGBA{0x7f, 0x7f, 0x7f, 0xff}
	case v.Method != config.MethodBicyc:
		return color.NRGBA{0x8c, 0x56, 0x4b, 0xff}
	case !v.Bi && !v.Cyc:
		return color.NRGBA{0x94, 0x67, 0xbd, 0xff}
	case !v.Bi:
		return color.NRGBA{0x2c, 0xa0, 0x2c, 0xff}
	case !v.Cyc:
		return color.NRGBA{0xff, 0x7f, 0x0e, 0xff}
	}
	return color.NRGBA{0xd6, 0x27, 0x28, 0xff}
}
