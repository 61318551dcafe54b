package train

import (
	"slices"
	"testing"

	"github.com/bicyc/bicyc/gauss"
)

// TestCalibrationSample: held-out images within gauss.MaxCalibrationPairs are
// all kept; beyond it a sample of gauss.MaxCalibrationPairs/K distinct images in
// their order, the same for the same seed, never fewer than
// gauss.MinCalibrationImages.
func TestCalibrationSample(t *testing.T) {
	idx := make([]int, 30000)
	for i := range idx {
		idx[i] = 3 * i
	}
	if got := calibrationSample(idx, 10, 1); !slices.Equal(got, idx) {
		t.Errorf("10 classes: %d of %d images kept, want all", len(got), len(idx))
	}
	const k = 5000
	got := calibrationSample(idx, k, 1)
	if len(got) != gauss.MaxCalibrationPairs/k || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Fatalf("%d classes: %d images (sorted %v), want %d distinct in order", k, len(got), slices.IsSorted(got), gauss.MaxCalibrationPairs/k)
	}
	for _, v := range got {
		if v%3 != 0 || v/3 >= len(idx) {
			t.Fatalf("sampled %d, not one of the held-out images", v)
		}
	}
	if again := calibrationSample(idx, k, 1); !slices.Equal(again, got) {
		t.Error("the same seed drew another sample")
	}
	if other := calibrationSample(idx, k, 2); slices.Equal(other, got) {
		t.Error("another seed drew the same sample")
	}
	if few := calibrationSample(idx, 1<<30, 1); len(few) != gauss.MinCalibrationImages {
		t.Errorf("a billion classes: %d images, want gauss.MinCalibrationImages = %d", len(few), gauss.MinCalibrationImages)
	}
}
