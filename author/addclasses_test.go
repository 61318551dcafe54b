package author

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/infer"
	"github.com/bicyc/bicyc/names"
)

// writeClassFolder writes Fashion-MNIST test images as PNG files into
// root/<name>/, one sub-folder per class (named by class ID when the name
// holds a slash): the first n images of each given label after skip of
// them.
func writeClassFolder(t testing.TB, f *fixture, root string, labels []int, skip, n int) {
	t.Helper()
	for _, y := range labels {
		name := data.FashionMNISTClasses[y]
		if strings.Contains(name, "/") {
			name = strconv.Itoa(y)
		}
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		seen := 0
		for i, l := range f.test.Labels {
			if int(l) != y {
				continue
			}
			seen++
			if seen <= skip {
				continue
			}
			if seen > skip+n {
				break
			}
			out, err := os.Create(filepath.Join(dir, fmt.Sprintf("%05d.png", i)))
			if err != nil {
				t.Fatal(err)
			}
			if err := png.Encode(out, fashionImage(f.test, i)); err != nil {
				t.Fatal(err)
			}
			out.Close()
		}
	}
}

// dirDigest hashes every file of dir, to prove a directory untouched.
func dirDigest(t testing.TB, dir string) [sha256.Size]byte {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		h.Write([]byte(path))
		h.Write(raw)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// TestAddClasses adds Sandal and Bag to the one-task model from the same 30
// images the fixture's reference prototypes come from: the new model must
// score the new classes exactly like the reference classifier, keep the old
// classes' scores, and record the additions.
func TestAddClasses(t *testing.T) {
	f := loadFixture(t)
	root := t.TempDir()
	writeClassFolder(t, f, filepath.Join(root, "new"), []int{5, 8}, 0, fixturePerClass)
	classes, _, err := ReadClassFolders(filepath.Join(root, "new"))
	if err != nil {
		t.Fatal(err)
	}
	before := dirDigest(t, f.oneTask)
	out := filepath.Join(root, "model-v2")
	added, err := AddClasses(context.Background(), f.oneTask, out, classes, cpu...)
	if err != nil {
		t.Fatal(err)
	}
	if dirDigest(t, f.oneTask) != before {
		t.Fatal("the original model changed")
	}
	if b, err := bundle.Open(out); err != nil || !b.ManifestVerified {
		t.Fatalf("the new model does not open with a verified manifest (%s): %v", bundle.DigestFile, err)
	}
	// Folders are read in name order: Bag, then Sandal, in a second task
	// (tasks are numbered from 1).
	if len(added.Classes) != 2 || added.Classes[0] != (bundle.Class{ID: 5, Name: "Bag", Task: 2, AddedImages: fixturePerClass}) ||

		added.Classes[1].Name != "Sandal" || added.Classes[1].ID != 6 {
		t.Fatalf("added %+v", added.Classes)
	}
	c := openCPU(t, out, infer.WithTopK(7))
	old := openCPU(t, f.oneTask, infer.WithTopK(5))
	idx := heldOut(f, 10)
	var worst float64
	for _, i := range idx {
		img := fashionImage(f.test, i)
		feat, err := c.Embed(context.Background(), []image.Image{img})
		if err != nil {
			t.Fatal(err)
		}
		want := f.models.Reference.Scores(feat[0], 1)
		got, err := c.Classify(context.Background(), img)
		if err != nil {
			t.Fatal(err)
		}
		was, err := old.Classify(context.Background(), img)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[int]float32{}
		for _, p := range got.Predictions {
			byID[p.ClassID] = p.Distance
		}
		for _, p := range was.Predictions {
			worst = max(worst, relDiff(byID[p.ClassID], p.Distance))
		}
		worst = max(worst, relDiff(byID[5], want[8]), relDiff(byID[6], want[5]))
	}
	t.Logf("largest relative score difference to the reference and the old model: %.3g", worst)
	if worst > 1e-3 {
		t.Errorf("largest relative score difference %.3g, want <= 1e-3", worst)
	}
}

func relDiff(a, b float32) float64 {
	return math.Abs(float64(a-b)) / max(math.Abs(float64(b)), 1)
}

// TestAddClassesRejectsBadInput pins each refusal; the original model is
// untouched and no output is written.
func TestAddClassesRejectsBadInput(t *testing.T) {
	f := loadFixture(t)
	root := t.TempDir()
	good := filepath.Join(root, "good")
	writeClassFolder(t, f, good, []int{5}, 0, MinAddImages)
	few := filepath.Join(root, "few")
	writeClassFolder(t, f, few, []int{5}, 0, MinAddImages-1)
	dup := filepath.Join(root, "dup")
	writeClassFolder(t, f, dup, []int{1}, 0, MinAddImages) // "Trouser" is class 1 of the model
	// Issue 42, row 5: a name that is a class's up to letter case, and
	// one with a right-to-left override, are refused as learn refuses them.
	alike := filepath.Join(root, "alike")
	writeClassFolder(t, f, alike, []int{1}, 0, MinAddImages)
	if err := os.Rename(filepath.Join(alike, "Trouser"), filepath.Join(alike, "trouser")); err != nil {
		t.Fatal(err)
	}
	bidi := filepath.Join(root, "bidi")
	writeClassFolder(t, f, bidi, []int{5}, 0, MinAddImages)
	if err := os.Rename(filepath.Join(bidi, "Sandal"), filepath.Join(bidi, "evil\u202egnp")); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(root, "pipe")
	writeClassFolder(t, f, pipe, []int{5}, 0, MinAddImages)
	if err := syscall.Mkfifo(filepath.Join(pipe, "Sandal", "pipe.png"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A named pipe is passed over unopened (never waited on for a
	// writer), and said so, as every command that reads class folders does.
	if classes, skipped, err := ReadClassFolders(pipe); err != nil || len(classes[0].Files) != MinAddImages ||
		len(skipped) != 1 || !strings.Contains(skipped[0], filepath.Join(pipe, "Sandal", "pipe.png")+": not a regular file (named pipe)") {
		t.Errorf("pipe: classes %v, skipped %q, error %v; want %d files and the pipe skipped", classes, skipped, err, MinAddImages)
	}
	before := dirDigest(t, f.oneTask)
	for i, tc := range []struct {
		from     string
		setup    func()
		sentinel error
		want     string
	}{
		{few, nil, ErrTooFewImages, `class "Sandal": too few images for a class: 4 images, want at least 5`},
		{dup, nil, ErrDuplicateClass, `"Trouser" is already class 1 of the model`},
		{alike, nil, ErrDuplicateClass, `"trouser" is already class 1 of the model, "Trouser", up to letter case or Unicode form`},
		{bidi, nil, names.ErrInvalid, "U+202E"},
		{good, func() {
			afterEmbed = func(dir string) {
				raw, _ := os.ReadFile(filepath.Join(dir, bundle.ManifestFile))
				os.WriteFile(filepath.Join(dir, bundle.ManifestFile), append(raw, ' '), 0o644)
			}
		}, ErrModelChanged, "model directory changed while it was read"},
	} {
		copyDir := filepath.Join(root, "model", strconv.Itoa(i))
		copyTree(t, f.oneTask, copyDir)
		if tc.setup != nil {
			tc.setup()
		}
		classes, _, err := ReadClassFolders(tc.from)
		if err == nil {
			_, err = AddClasses(context.Background(), copyDir, filepath.Join(root, "out", strconv.Itoa(i)), classes, cpu...)
		}
		afterEmbed = func(string) {}
		if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("case %d: error %v, want %v containing %q", i, err, tc.sentinel, tc.want)
		}
		if _, err := os.Stat(filepath.Join(root, "out", strconv.Itoa(i))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("case %d: output written (%v)", i, err)
		}
	}
	if dirDigest(t, f.oneTask) != before {
		t.Fatal("the original model changed")
	}
}

// TestReadClassFoldersLayout pins the folder-layout rule of
// data.ListClassFolders as add-classes and calibrate see it: problems are
// errors wrapping ErrClassFolder, all named at once; what is passed over is
// reported in skipped.
func TestReadClassFoldersLayout(t *testing.T) {
	root := t.TempDir()
	mk := func(path, content string) {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk(filepath.Join(root, "flat", "a.png"), "x")
	mk(filepath.Join(root, "nested", "bag", "deeper", "a.png"), "x")
	mk(filepath.Join(root, "text", "bag", "notes.txt"), "x")
	os.MkdirAll(filepath.Join(root, "empty", "bag"), 0o755)
	os.MkdirAll(filepath.Join(root, "none"), 0o755)
	mk(filepath.Join(root, "names", "new\nline", "a.png"), "x")
	mk(filepath.Join(root, "names", " lead", "a.png"), "x")
	mk(filepath.Join(root, "names", "Cl\xffass", "a.png"), "x")
	mk(filepath.Join(root, "names", "...", "a.png"), "x")
	for i, tc := range []struct{ dir, want, skipped string }{
		{"flat", "no class sub-folders", "a.png: not a folder, so not a class"},
		{"text", "no image files", "1 files without an image extension not read"},
		{"empty", "no image files", ""},
		{"none", "no class sub-folders", ""},
		{"missing", "no such file", ""},
		{"names", "3 problems with class folders", "...: hidden"},
	} {
		_, skipped, err := ReadClassFolders(filepath.Join(root, tc.dir))
		if !errors.Is(err, ErrClassFolder) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("case %d %s: error %v, want ErrClassFolder containing %q", i, tc.dir, err, tc.want)
		}
		if tc.skipped != "" && !strings.Contains(strings.Join(skipped, "\n"), tc.skipped) {
			t.Errorf("case %d %s: skipped %q, want a line containing %q", i, tc.dir, skipped, tc.skipped)
		}
	}
	// Nested folders inside a class folder are walked, as training does.
	classes, _, err := ReadClassFolders(filepath.Join(root, "nested"))
	if err != nil || len(classes) != 1 || len(classes[0].Files) != 1 {
		t.Errorf("nested: %v, %v; want class bag with its one image", classes, err)
	}
}

func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), raw, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAddClassesCancelled: a done context stops AddClasses and Calibrate
// before anything is written, with the context's error.
func TestAddClassesCancelled(t *testing.T) {
	f := loadFixture(t)
	root := t.TempDir()
	writeClassFolder(t, f, filepath.Join(root, "new"), []int{5}, 0, MinAddImages)
	classes, _, err := ReadClassFolders(filepath.Join(root, "new"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(root, "out")
	if _, err := AddClasses(ctx, f.oneTask, out, classes, cpu...); !errors.Is(err, context.Canceled) {
		t.Errorf("AddClasses: error %v, want context.Canceled", err)
	}
	writeClassFolder(t, f, filepath.Join(root, "known"), []int{1}, fixturePerClass, 25)
	known, _, err := ReadClassFolders(filepath.Join(root, "known"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Calibrate(ctx, f.oneTask, out, known, 0.95, cpu...); !errors.Is(err, context.Canceled) {
		t.Errorf("Calibrate: error %v, want context.Canceled", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("output written (%v)", err)
	}
}
