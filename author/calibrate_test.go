package author

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/infer"
)

// acceptedShare classifies images and returns the share not Unknown.
func acceptedShare(t *testing.T, c *infer.Classifier, imgs []image.Image) float64 {
	t.Helper()
	accepted := 0
	for start := 0; start < len(imgs); start += 256 {
		rs, err := c.ClassifyBatch(context.Background(), imgs[start:min(start+256, len(imgs))])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if !r.Unknown {
				accepted++
			}
		}
	}
	return float64(accepted) / float64(len(imgs))
}

// TestCalibrateAcceptRate calibrates the two-task model on 100 held-out
// Fashion-MNIST test images per class (written as PNG files) and checks on
// 300 other images per class that the requested share of known images is
// accepted within 2 points, through Open with the manifest's default and
// with infer.WithAcceptRate, and that posteriors are reported.
func TestCalibrateAcceptRate(t *testing.T) {
	f := loadFixture(t)
	root := t.TempDir()
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	writeClassFolder(t, f, filepath.Join(root, "heldout"), all, fixturePerClass, 100)
	heldOut, _, err := ReadClassFolders(filepath.Join(root, "heldout"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "calibrated")
	cal, err := Calibrate(context.Background(), f.twoTasks, out, heldOut, gauss.DefaultAcceptRate, cpu...)
	if err != nil {
		t.Fatal(err)
	}
	if cal.HeldOutImages != 1000 || cal.AcceptRate != 0.95 {
		t.Fatalf("calibration %+v", cal)
	}
	if b, err := bundle.Open(out); err != nil || !b.ManifestVerified {
		t.Fatalf("the calibrated model does not open with a verified manifest: %v", err)
	}
	var test []image.Image
	count := make([]int, 10)
	for i, y := range f.test.Labels {
		count[y]++
		if count[y] > fixturePerClass+100 && count[y] <= fixturePerClass+400 {
			test = append(test, fashionImage(f.test, i))
		}
	}
	c := openCPU(t, out)
	if got := acceptedShare(t, c, test); math.Abs(got-0.95) > 0.02 {
		t.Errorf("accepted %.3f of %d known test images, asked 0.95", got, len(test))
	} else {
		t.Logf("accepted %.3f of %d known test images at 0.95", got, len(test))
	}
	if got := acceptedShare(t, openCPU(t, out, infer.WithAcceptRate(0.8)), test); math.Abs(got-0.8) > 0.03 {
		t.Errorf("accepted %.3f of known test images, asked 0.8", got)
	}
	r, err := c.Classify(context.Background(), test[0])
	if err != nil {
		t.Fatal(err)
	}
	if !c.Calibrated() || r.Confidence <= 0 || r.Confidence > 1 || r.Confidence != r.Predictions[0].Probability ||
		r.Predictions[1].Probability > r.Confidence {
		t.Errorf("calibrated result %+v", r)
	}
	noise := make([]image.Image, 200)
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range noise {
		img := image.NewRGBA(image.Rect(0, 0, 28, 28))
		for p := range 28 * 28 {
			img.Set(p%28, p/28, color.RGBA{uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)), 255})
		}
		noise[i] = img
	}
	if got := acceptedShare(t, c, noise); got > 0.1 {
		t.Errorf("accepted %.3f of colour-noise images as known", got)
	}
}

// TestSampleHeldOut: folders within gauss.MaxCalibrationPairs are kept as
// they are; beyond it the sample keeps the folders' order and names, the
// files in order, and drops a class left without any.
func TestSampleHeldOut(t *testing.T) {
	var held []LabelledImages
	total := 0
	for c := range 30 {
		h := LabelledImages{Name: fmt.Sprintf("class-%02d", c)}
		for i := range 1 + c%3 {
			h.Files = append(h.Files, fmt.Sprintf("%02d-%d.png", c, i))
			total++
		}
		held = append(held, h)
	}
	if got := sampleHeldOut(held, 10); len(got) != len(held) {
		t.Fatalf("10 classes: %d folders, want all %d", len(got), len(held))
	}
	k := gauss.MaxCalibrationPairs / gauss.MinCalibrationImages // limit: MinCalibrationImages images
	got := sampleHeldOut(held, k)
	n, last := 0, ""
	for _, h := range got {
		if len(h.Files) == 0 || h.Name <= last {
			t.Fatalf("folder %q after %q with %d files: want non-empty folders in order", h.Name, last, len(h.Files))
		}
		last = h.Name
		for i, f := range h.Files {
			if !strings.HasPrefix(f, h.Name[len("class-"):]+"-") || (i > 0 && f <= h.Files[i-1]) {
				t.Fatalf("folder %q holds %v: want its own files in order", h.Name, h.Files)
			}
		}
		n += len(h.Files)
	}
	if n != gauss.MinCalibrationImages || total <= n {
		t.Errorf("%d classes: %d of %d images kept, want %d", k, n, total, gauss.MinCalibrationImages)
	}
}

// TestHeldOutLabelsExact: issue 42, row 5. Calibration folders match
// class names exactly (up to Unicode form) or by ID: on a model with
// "Shirt" and "shirt" (made before such names were refused), each
// folder's images are labelled with its own class, never the other.
func TestHeldOutLabelsExact(t *testing.T) {
	classes := []bundle.Class{{ID: 0, Name: "Shirt"}, {ID: 1, Name: "shirt"}, {ID: 2, Name: "cafe\u0301"}}
	held := []LabelledImages{
		{Name: "Shirt", Files: []string{"a", "b"}},
		{Name: "shirt", Files: []string{"c"}},
		{Name: "caf\u00e9", Files: []string{"d"}},
		{Name: "0", Files: []string{"e"}},
	}
	labels, err := heldOutLabels(classes, held)
	if err != nil || !slices.Equal(labels, []int{0, 0, 1, 2, 0}) {
		t.Errorf("labels %v, %v; want [0 0 1 2 0]", labels, err)
	}
	if _, err := heldOutLabels(classes, []LabelledImages{{Name: "SHIRT", Files: []string{"f"}}}); !errors.Is(err, ErrClassFolder) {
		t.Errorf("a folder named like no class: %v", err)
	}
}
