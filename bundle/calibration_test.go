package bundle

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bicyc/bicyc/gauss"
)

// testCalibration fits to the three test classes of testModel.
func testCalibration() *Calibration {
	ref := make([]float64, 41)
	for i := range ref {
		ref[i] = float64(i) / 8
	}
	c, err := NewCalibration(gauss.Calibration{Temperature: 1.5, Scales: []float64{2, 3, 4}, Reference: ref}, 40, gauss.DefaultAcceptRate, gauss.ScoreMahalanobis)
	if err != nil {
		panic(err)
	}
	return c
}

// TestCalibrationRoundTrip writes a calibrated model with an added class
// and reads both back; a model without calibration opens with none.
func TestCalibrationRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "model")
	m, files := testModel(t)
	m.Calibration = testCalibration()
	m.Classes[2].AddedImages = 12
	if err := Write(dir, m, files); err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := b.Manifest.Calibration
	if got == nil || got.Temperature != 1.5 || !slices.Equal(got.ClassScales, []float64{2, 3, 4}) ||
		got.Threshold != 4.75 || got.AcceptRate != 0.95 || got.HeldOutImages != 40 || b.Manifest.Classes[2].AddedImages != 12 {
		t.Fatalf("calibration after round trip %+v, classes %+v", got, b.Manifest.Classes)
	}
	plain := filepath.Join(t.TempDir(), "plain")
	m, files = testModel(t)
	if err := Write(plain, m, files); err != nil {
		t.Fatal(err)
	}
	if b, err := Open(plain); err != nil || b.Manifest.Calibration != nil {
		t.Fatalf("model without calibration: %v, %+v", err, b.Manifest.Calibration)
	}
}

// TestCalibrationRejected pins each invalid calibration.
func TestCalibrationRejected(t *testing.T) {
	for i, tc := range []struct {
		edit func(c *Calibration)
		want string
	}{
		{func(c *Calibration) { c.ClassScales = c.ClassScales[:2] }, "2 class scales for 3 classes"},
		{func(c *Calibration) { c.Temperature = -1 }, "temperature -1"},
		{func(c *Calibration) { c.HeldOutImages = 3 }, "3 held-out images"},
		{func(c *Calibration) { c.AcceptRate = 1.5 }, "accept_rate 1.5"},
		{func(c *Calibration) { slices.Reverse(c.HeldOutScores) }, "ascending"},
	} {
		m, files := testModel(t)
		m.Calibration = testCalibration()
		tc.edit(m.Calibration)
		err := Write(filepath.Join(t.TempDir(), "model"), m, files)
		if !errors.Is(err, ErrManifest) || !errors.Is(err, gauss.ErrCalibration) && !strings.Contains(err.Error(), "calibration") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("case %d: error %v, want ErrManifest containing %q", i, err, tc.want)
		}
	}
}
