package infer

import (
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/bicyc/bicyc/bundle"
)

// TestShortlist grows the fixture to more than bundle.ShortlistSize classes
// with AddClasses (each new class from 5 test images of one label) and
// checks WithShortlist: off, or on a model of too few classes, the
// Classifier scores exactly; on, it reports Shortlisted, and wherever its
// top-1 class is the exact one, so is the distance (the shortlisted
// classes are scored exactly). How often the top-1 agrees on real models
// is measured by bench/infer --classes (docs/inference.md).
func TestShortlist(t *testing.T) {
	f := loadFixture(t)
	small, err := Open(f.twoTasks, WithProvider(ProviderCPU), WithShortlist(true), WithLog(nil))
	if err != nil {
		t.Fatal(err)
	}
	if small.Shortlisted() {
		t.Errorf("a %d-class model runs the shortlist", len(small.Classes()))
	}
	small.Close()

	root := t.TempDir()
	const added = bundle.ShortlistSize
	var classes []LabelledImages
	for j := range added {
		dir := filepath.Join(root, "new", fmt.Sprintf("extra-%03d", j))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		class := LabelledImages{Name: filepath.Base(dir)}
		for i := range 5 {
			idx := 5000 + 5*j + i
			path := filepath.Join(dir, fmt.Sprintf("%05d.png", idx))
			writePNG(t, path, fashionImage(f.test, idx))
			class.Files = append(class.Files, path)
		}
		classes = append(classes, class)
	}
	out := filepath.Join(root, "model")
	if _, err := AddClasses(f.twoTasks, out, classes, WithProvider(ProviderCPU), WithLog(nil)); err != nil {
		t.Fatal(err)
	}
	exact := openCPU(t, out)
	short, err := Open(out, WithProvider(ProviderCPU), WithShortlist(true), WithLog(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	if exact.Shortlisted() || !short.Shortlisted() {
		t.Fatalf("Shortlisted: exact %v, with the option %v", exact.Shortlisted(), short.Shortlisted())
	}
	imgs := make([]image.Image, 200)
	for i := range imgs {
		imgs[i] = fashionImage(f.test, 9000+i)
	}
	want, err := exact.ClassifyBatch(imgs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := short.ClassifyBatch(imgs)
	if err != nil {
		t.Fatal(err)
	}
	same := 0
	for i := range imgs {
		w, g := want[i].Predictions[0], got[i].Predictions[0]
		if w.ClassID != g.ClassID {
			continue
		}
		same++
		if relDiff(w.Distance, g.Distance) > 1e-4 {
			t.Errorf("image %d: class %d at distance %v exact, %v shortlisted", i, w.ClassID, w.Distance, g.Distance)
		}
	}
	t.Logf("top-1 agrees on %d of %d images", same, len(imgs))
	if same == 0 {
		t.Error("the shortlist never agrees with the exact top-1")
	}
}

func writePNG(t *testing.T, path string, img image.Image) {
	t.Helper()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := png.Encode(out, img); err != nil {
		t.Fatal(err)
	}
}
