package report_test

import (
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/report"
)

// TestSizeCurve builds three directories of hand-made runs at 30, 100 and
// all images per class and checks the table against the numbers written,
// the order of the sizes and the figure.
func TestSizeCurve(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	for _, size := range []int{100, 0, 30} {
		dir := filepath.Join(root, fmt.Sprintf("n%d", size))
		dirs = append(dirs, dir)
		for seed := range 2 {
			for j, method := range []config.Method{config.MethodBicyc, config.MethodFinetune} {
				if size == 100 && method == config.MethodFinetune {
					continue // a method missing at one size is drawn across it
				}
				cfg := config.Default()
				cfg.Stream.Tasks, cfg.Method, cfg.Seed, cfg.Data.TrainPerClass = 2, method, int64(seed), size
				old := 0.5 + 0.1*float64(seed) - 0.2*float64(j)
				writeRunFiles(filepath.Join(dir, fmt.Sprintf("%s-s%d", method, seed)), cfg,
					[][]float64{{0.9}, {old, 0.8}}, [][]float64{{0.95}, {0.9, 0.9}})
			}
		}
	}
	c, err := report.NewSizeCurve(dirs)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c.Sizes) != "[30 100 0]" {
		t.Errorf("sizes %v, want [30 100 0] (all last)", c.Sizes)
	}
	md := c.Markdown()
	// bicyc seeds: A_last = (old + 0.8)/2 = 0.65 and 0.70.
	for i, want := range []string{"| 30 | bicyc | 2 | 67.5 ± 3.5 |", "| all | finetune | 2 | 57.5 ± 3.5 |", "| 65.0, 70.0 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("case %d: table lacks %q:\n%s", i, want, md)
		}
	}
	if strings.Contains(md, "| 100 | finetune |") {
		t.Errorf("table has a row for a method not run at that size:\n%s", md)
	}
	dest := filepath.Join(root, "out")
	if err := report.WriteSizeCurve(c, dest); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dest, "figures", report.SizeFigureFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if img, err := png.Decode(f); err != nil || img.Bounds().Dx() != 720 {
		t.Errorf("figure: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "sizes.md")); err != nil || !strings.Contains(string(b), md) {
		t.Errorf("sizes.md: %v", err)
	}
	if _, err := report.NewSizeCurve([]string{dirs[0], dirs[0]}); err == nil {
		t.Error("two directories of one size: no error")
	}
}
