package sweep

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bicyc/bicyc/config"
)

// TestSweepRecordNamesPathsRelative checks that a sweep started with
// absolute paths inside the working directory records them relative to it
// (a published sweep.json must not name one machine's directories), and
// keeps a path outside it as it is.
func TestSweepRecordNamesPathsRelative(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(filepath.Dir(wd), "elsewhere", "runs")
	for i, c := range []struct{ config, out, wantConfig, wantOut string }{
		{filepath.Join(wd, "configs", "fmnist-t5.yaml"), filepath.Join(wd, "runs", "sweep"), filepath.Join("configs", "fmnist-t5.yaml"), filepath.Join("runs", "sweep")},
		{"configs/fmnist-t5.yaml", outside, "configs/fmnist-t5.yaml", outside},
	} {
		spec := Spec{Config: c.config, Out: c.out, Seeds: 1, Methods: []config.Method{config.MethodBicyc}}
		rec := newRecord(spec, spec.Plan())
		if rec.Spec.Config != c.wantConfig || rec.Spec.Out != c.wantOut {
			t.Errorf("case %d: recorded config %q, out %q; want %q, %q", i, rec.Spec.Config, rec.Spec.Out, c.wantConfig, c.wantOut)
		}
	}
}
