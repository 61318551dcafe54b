package infer

import (
	"bytes"
	"context"
	"image"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/imaging"
)

// TestOldManifestSquashes opens a model directory whose manifest has no
// resize mode (the test bundles are written the way bicyc wrote every
// manifest before the mode existed) and checks that a non-square photo is
// squashed to the input size, as those models were trained: its result
// equals that of the same photo squashed beforehand.
func TestOldManifestSquashes(t *testing.T) {
	f := loadFixture(t)
	raw, err := os.ReadFile(filepath.Join(f.twoTasks, bundle.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("resize_mode")) {
		t.Fatal("the fixture manifest states a resize mode; this test needs one without")
	}
	c := openCPU(t, f.twoTasks)
	if m := c.Manifest().Preprocess.ResizeMode; m != "" {
		t.Fatalf("resize mode %q", m)
	}
	// A Fashion-MNIST image stretched to 56x28: squashing brings it back.
	src := fashionImage(f.test, heldOut(f, 1)[3])
	wide := image.NewGray(image.Rect(0, 0, 56, 28))
	for y := range 28 {
		for x := range 56 {
			wide.Pix[y*56+x] = src.(*image.Gray).Pix[y*28+x/2]
		}
	}
	squash := imaging.Preprocess{Channels: 1, Height: 28, Width: 28, ResizeMode: arch.Squash}
	squashed := &image.Gray{Pix: squash.Pixels(wide), Stride: 28, Rect: image.Rect(0, 0, 28, 28)}
	got, err := c.ClassifyBatch(context.Background(), []image.Image{wide, squashed})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[0].Predictions, got[1].Predictions) {
		t.Errorf("56x28 photo: %v; squashed beforehand: %v", got[0].Predictions, got[1].Predictions)
	}
}
