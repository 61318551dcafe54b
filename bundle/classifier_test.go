package bundle

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/bicyc/bicyc/gauss"
)

// TestClassifierCalibrationRoundTrip writes a manifest with the classifier
// calibration options and class ages, opens it, and checks that Gauss gives
// gauss.NewClassifier those options with the ages in class order; ages out
// of range are refused.
func TestClassifierCalibrationRoundTrip(t *testing.T) {
	m, files := testModel(t)
	m.Classifier.OffDiagShrink, m.Classifier.AgeShrink, m.Classifier.AgeBias, m.Classifier.PoolCov = 1, 0.5, -0.25, 0.3
	m.Classes[0].Age, m.Classes[1].Age = 1, 1
	dir := filepath.Join(t.TempDir(), "model")
	if err := Write(dir, m, files); err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := b.Manifest.Classifier.WithAges(Ages(b.Manifest.Classes))
	want := gauss.ClassifierOptions{Shrink: 3, Normalize: true, TopK: 3, OffDiagShrink: 1, AgeShrink: 0.5, AgeBias: -0.25, PoolCov: 0.3, Ages: []int{1, 1, 0}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("options %+v, want %+v", got, want)
	}
	rewriteManifest(t, dir, func(raw map[string]any) {
		raw["classes"].([]any)[0].(map[string]any)["age"] = 2.0
	})
	if _, err := Open(dir); !errors.Is(err, ErrManifest) {
		t.Errorf("a task-1 class of age 2 in a 2-task model: error %v, want ErrManifest", err)
	}
}

// TestOpenReadsSchemaVersion2Classifier opens a manifest of schema version
// 2, which had no calibration options: it keeps the classifier it was
// written with (every option off, no ages).
func TestOpenReadsSchemaVersion2Classifier(t *testing.T) {
	m, files := testModel(t)
	dir := filepath.Join(t.TempDir(), "model")
	if err := Write(dir, m, files); err != nil {
		t.Fatal(err)
	}
	rewriteManifest(t, dir, func(raw map[string]any) {
		raw["schema_version"] = 2
		c := raw["classifier"].(map[string]any)
		for _, key := range []string{"off_diag_shrink", "age_shrink", "age_bias", "pool_cov"} {
			if _, ok := c[key]; ok {
				t.Fatalf("an options-off manifest writes %s", key)
			}
		}
	})
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := b.Manifest.Classifier.WithAges(Ages(b.Manifest.Classes))
	if want := (gauss.ClassifierOptions{Shrink: 3, Normalize: true, TopK: 3}); !reflect.DeepEqual(got, want) {
		t.Errorf("schema-2 classifier options %+v, want %+v", got, want)
	}
}
