package main

import (
	"math"
	"testing"

	"github.com/bicyc/bicyc/gauss"
)

func TestDetect(t *testing.T) {
	known := []float64{1, 2, 3, 4}
	for _, tc := range []struct {
		unknown   []float64
		auroc, fp float64
	}{
		{[]float64{5, 6}, 1, 0},         // every unknown above every known
		{[]float64{0, 0.5}, 0, 1},       // every unknown below
		{[]float64{2.5}, 0.5, 1},        // in the middle
		{[]float64{1, 2, 3, 4}, 0.5, 1}, // ties count half
	} {
		d := detect(known, tc.unknown)
		if math.Abs(d.AUROC-tc.auroc) > 1e-12 || math.Abs(d.FPR95-tc.fp) > 1e-12 {
			t.Errorf("detect(%v, %v) = %+v, want AUROC %v FPR %v", known, tc.unknown, d, tc.auroc, tc.fp)
		}
	}
}

// TestPictureOf: every encoding of one picture falls in one split.
func TestPictureOf(t *testing.T) {
	same := [][2]string{
		{"jxl/flower/flower.png", "jxl/flower/flower_small.q85_420_non_interleaved.jpg"},
		{"external/wesaturate/64px/cvo9xd_keong_macan_srgb8.png", "external/wesaturate/500px/cvo9xd_keong_macan_grayscale.png"},
		{"external/raw.pixls/DJI-FC6310-16bit_709_v4_krita.png", "external/raw.pixls/DJI-FC6310-16bit_srgb8_v4_krita.png"},
		{"video-001.q50.420.jpeg", "video-001.png"},
	}
	for _, p := range same {
		if pictureOf(p[0]) != pictureOf(p[1]) {
			t.Errorf("%s and %s are one picture: %q, %q", p[0], p[1], pictureOf(p[0]), pictureOf(p[1]))
		}
	}
	if pictureOf("video-001.png") == pictureOf("video-005.gray.png") {
		t.Error("two pictures share a name")
	}
}

// TestChooseScoreReadsValidationOnly: the test split's numbers never
// change the choice.
func TestChooseScoreReadsValidationOnly(t *testing.T) {
	kinds := func(val, test map[string]float64) *scoreKinds {
		k := &scoreKinds{Scores: map[string]map[string]map[string]detection{}}
		for _, u := range gauss.UnknownScores() {
			name := string(u)
			k.Scores[name] = map[string]map[string]detection{splitValidation: {}, splitTest: {}}
			for _, kind := range validationKinds {
				k.Scores[name][splitValidation][kind] = detection{AUROC: val[name]}
			}
			for _, kind := range testKinds {
				k.Scores[name][splitTest][kind] = detection{AUROC: test[name]}
			}
		}
		return k
	}
	val := map[string]float64{"energy": 0.9, "residual": 0.8}
	test := map[string]float64{"energy": 0.1, "residual": 0.99, "cosine": 1}
	got, means := chooseScore([]seedResult{{Kinds: kinds(val, test)}, {Kinds: kinds(val, nil)}})
	if got != "energy" || means["energy"] != 0.9 {
		t.Errorf("chose %q (%v), want energy on validation", got, means)
	}
	if got, _ := chooseScore([]seedResult{{}}); got != "" {
		t.Errorf("no measured kinds: chose %q", got)
	}
}
