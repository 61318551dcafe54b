package infer

import (
	"bytes"
	"image"
	"image/jpeg"
	"math"
	"testing"
)

// withOrientation returns a JPEG with an EXIF segment (big-endian TIFF, as
// many cameras write it) whose Orientation tag is o, inserted after SOI.
func withOrientation(t *testing.T, jpg []byte, o uint16) []byte {
	t.Helper()
	if len(jpg) < 2 || jpg[0] != 0xff || jpg[1] != 0xd8 {
		t.Fatal("not a JPEG")
	}
	tiff := []byte{'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, byte(o >> 8), byte(o), 0, 0, 0, 0, 0, 0}
	seg := append([]byte("Exif\x00\x00"), tiff...)
	out := append([]byte{0xff, 0xd8, 0xff, 0xe1, byte((len(seg) + 2) >> 8), byte(len(seg) + 2)}, seg...)
	return append(out, jpg[2:]...)
}

// turnCounterClockwise returns img turned 90 degrees counter-clockwise: how
// a camera held upright stores a picture whose EXIF orientation is 6.
func turnCounterClockwise(img *image.Gray) *image.Gray {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	out := image.NewGray(image.Rect(0, 0, h, w))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			out.SetGray(y, w-1-x, img.GrayAt(x, y))
		}
	}
	return out
}

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

// TestClassifyPortraitJPEG classifies Fashion-MNIST images sent as a phone
// sends a portrait photo: stored sideways with EXIF orientation 6. Each is
// classified as the upright JPEG is (same classes, distances within JPEG's
// loss), and the same sideways pixels without the tag are not, so the tag
// is what makes the difference.
func TestClassifyPortraitJPEG(t *testing.T) {
	f := loadFixture(t)
	c := openCPU(t, f.twoTasks, WithTopK(10))
	encode := func(img image.Image) []byte {
		var b bytes.Buffer
		if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 100}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	for _, i := range []int{7000, 7001, 7002, 7003} {
		img := fashionImage(f.test, i).(*image.Gray)
		sideways := encode(turnCounterClockwise(img))
		upright, err := c.ClassifyReader(bytes.NewReader(encode(img)))
		if err != nil {
			t.Fatal(err)
		}
		tagged, err := c.ClassifyReader(bytes.NewReader(withOrientation(t, sideways, 6)))
		if err != nil {
			t.Fatal(err)
		}
		untagged, err := c.ClassifyReader(bytes.NewReader(sideways))
		if err != nil {
			t.Fatal(err)
		}
		if tagged.Predictions[0].ClassID != upright.Predictions[0].ClassID {
			t.Errorf("image %d: tagged sideways JPEG is class %d, upright %d", i, tagged.Predictions[0].ClassID, upright.Predictions[0].ClassID)
		}
		gapTagged, gapUntagged := maxDistanceGap(upright, tagged), maxDistanceGap(upright, untagged)
		t.Logf("image %d: distance gap to the upright JPEG %.3f with the tag, %.3f without", i, gapTagged, gapUntagged)
		if gapTagged > 0.005 || gapUntagged < 4*gapTagged {
			t.Errorf("image %d: distance gap to the upright JPEG %.3f with the tag, %.3f without", i, gapTagged, gapUntagged)
		}
	}
}
