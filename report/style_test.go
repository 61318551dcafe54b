package report

import (
	"bytes"
	"image"
	"os"
	"path/filepath"
	"testing"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/sweep"
)

// eightVariants are the main variants of the e10-order sweeps: four of
// bicyc, four of adagauss, whose A_last lines end within a point.
func eightVariants() ([]sweep.Variant, []float64) {
	var vs []sweep.Variant
	for _, m := range []config.Method{config.MethodBicyc, config.MethodAdaGauss} {
		for _, name := range []string{"", "cal", "flip", "sflip"} {
			vs = append(vs, sweep.Variant{Method: m, Name: name, Bi: true, Cyc: true})
		}
	}
	// docs/results/e10-order1: test A_last after task 5 (%).
	return vs, []float64{76.8, 76.5, 76.9, 77.5, 77.2, 76.6, 77.4, 78.3}
}

// TestEightSeriesAreDistinguishable renders the A_last figure of eight
// variants and checks that no two series share (colour, dash, marker),
// that the legend lists them in the order of their final values, and
// that lines ending within a point get the zoomed panel and the caption.
func TestEightSeriesAreDistinguishable(t *testing.T) {
	vs, finals := eightVariants()
	book := newStyleBook(vs)
	var ss []series
	for i, v := range vs {
		steps := []Stat{{Mean: 0.92, Std: 0.002, N: 3}, {Mean: 0.86, Std: 0.004, N: 3}, {Mean: finals[i] / 100, Std: 0.006, N: 3}}
		ss = append(ss, percentSeries(v, book.of(v), steps))
	}
	seen := map[string]string{}
	for i, s := range ss {
		k := s.style.key()
		if other, dup := seen[k]; dup {
			t.Errorf("case %d: %s is drawn like %s (%s)", i, s.label, other, k)
		}
		seen[k] = s.label
		if s.style.marker == nil {
			t.Errorf("case %d: %s has no marker", i, s.label)
		}
	}
	want := []string{"adagauss+sflip", "bicyc+sflip", "adagauss+flip", "adagauss", "bicyc+flip", "bicyc", "adagauss+cal", "bicyc+cal"}
	for i, s := range byFinal(ss) {
		if s.label != want[i] {
			t.Errorf("legend row %d: %s, want %s", i, s.label, want[i])
		}
	}
	png, w, h, err := curves("A_last", "A_last (%)", "Mean ± std over seeds 0-2 (3 runs per variant).\nBudget: test.", ss, curveWidth, curveHeight, true, false)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(png))
	if err != nil {
		t.Fatal(err)
	}
	if w != curveWidth+zoomWidth || cfg.Width != w || cfg.Height != h {
		t.Errorf("figure %dx%d (stated %dx%d), want the %d px zoomed panel beside the %d px curves", cfg.Width, cfg.Height, w, h, zoomWidth, curveWidth)
	}
	// Lines far apart need no zoom.
	_, w, _, err = curves("A_last", "A_last (%)", "", ss[:1], curveWidth, curveHeight, true, false)
	if err != nil || w != curveWidth {
		t.Errorf("one series: width %d, err %v; want %d", w, err, curveWidth)
	}
}

// TestStyleBookIsStable gives a variant the same style whatever other
// variants a figure shows, and up to 40 variants of one method distinct
// styles.
func TestStyleBookIsStable(t *testing.T) {
	vs, _ := eightVariants()
	all := newStyleBook(vs)
	some := newStyleBook(vs[:2])
	for i, v := range vs[:2] {
		if all.of(v).key() != some.of(v).key() {
			t.Errorf("case %d: %s changes style with the other variants", i, v)
		}
	}
	var many []sweep.Variant
	for i := range 40 {
		many = append(many, sweep.Variant{Method: config.MethodBicyc, Name: string(rune('a'+i%26)) + string(rune('a'+i/26)), Bi: true, Cyc: true})
	}
	book := newStyleBook(many)
	seen := map[string]bool{}
	for i, v := range many {
		k := book.of(v).key()
		if seen[k] {
			t.Errorf("case %d: variant %s repeats a style", i, v)
		}
		seen[k] = true
	}
}

// TestPublishedFiguresAreDistinguishable checks every published report
// under docs/results: the variants of each are drawn in distinct styles,
// and its A_last figures carry the caption of seeds and budget.
func TestPublishedFiguresAreDistinguishable(t *testing.T) {
	dirs, err := filepath.Glob("../docs/results/*/summary.json")
	nested, _ := filepath.Glob("../docs/results/*/*/summary.json")
	dirs = append(dirs, nested...)
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no published reports: %v", err)
	}
	for i, f := range dirs {
		dir := filepath.Dir(f)
		set, err := Load(dir)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		groups, err := Aggregate(set.Runs)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		var vs []sweep.Variant
		for _, g := range groups {
			vs = append(vs, g.Variant)
		}
		book := newStyleBook(vs)
		seen := map[string]sweep.Variant{}
		for _, v := range vs {
			k := book.of(v).key()
			if other, dup := seen[k]; dup {
				t.Errorf("case %d: %s: %s is drawn like %s", i, dir, v, other)
			}
			seen[k] = v
		}
		md, err := os.ReadFile(filepath.Join(dir, "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		if len(groups) > 0 && !bytes.Contains(md, []byte("Budget: ")) {
			t.Errorf("case %d: %s/report.md has no figure caption with the budget: run `bicyc report` on it again", i, dir)
		}
	}
}
