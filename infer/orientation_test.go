package infer

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"
)

// maxDistanceGap is the largest difference between the distances of the
// same classes in two results, relative to the first's.
func maxDistanceGap(a, b Result) float64 {
	gap := 0.0
	for _, p := range a.Predictions {
		for _, q := range b.Predictions {
			if p.ClassID == q.ClassID {
				gap = max(gap, math.Abs(float64(p.Distance-q.Distance))/max(1, math.Abs(float64(p.Distance))))
			}
		}
	}
	return gap
}

// TestClassifyEXIFOrientation classifies data's EXIF fixtures, one picture
// stored as a camera stores it under each of the eight EXIF orientations
// (written and checked with Pillow, imaging/testdata/exif/gen.py): every file
// scores every class as the upright PNG of the picture does, up to JPEG's
// loss (gaps up to 0.0005 measured; the stored pixels without the tag give
// 0.0075-0.017), as a phone's portrait photo must.
func TestClassifyEXIFOrientation(t *testing.T) {
	f := loadFixture(t)
	c := openCPU(t, f.twoTasks, WithTopK(10))
	dir := filepath.Join("..", "imaging", "testdata", "exif")
	upright, err := c.ClassifyFile(context.Background(), filepath.Join(dir, "upright.png"))
	if err != nil {
		t.Fatal(err)
	}
	for o := 1; o <= 8; o++ {
		got, err := c.ClassifyFile(context.Background(), filepath.Join(dir, fmt.Sprintf("orient-%d.jpg", o)))
		if err != nil {
			t.Fatal(err)
		}
		gap := maxDistanceGap(upright, got)
		t.Logf("orientation %d: top class %d (upright %d), distance gap %.4f", o, got.Predictions[0].ClassID, upright.Predictions[0].ClassID, gap)
		if got.Predictions[0].ClassID != upright.Predictions[0].ClassID || gap > 0.002 {
			t.Errorf("orientation %d: top class %d (upright %d), distance gap %.4f", o, got.Predictions[0].ClassID, upright.Predictions[0].ClassID, gap)
		}
	}
}
