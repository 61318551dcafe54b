package report

import (
	"testing"

	"github.com/bicyc/bicyc/rundir"
)

func TestTrainedWith(t *testing.T) {
	run := func(kernels ...string) *Run {
		r := &Run{}
		for _, k := range kernels {
			r.Summary.Reports = append(r.Summary.Reports, rundir.TaskReport{Kernels: k})
		}
		return r
	}
	skx, hsw := "OpenBLAS 0.3.21, kernels SkylakeX (chosen by bicyc: ...)", "OpenBLAS 0.3.21, kernels Haswell (chosen by openblas: ...)"
	for i, c := range []struct {
		runs []*Run
		want string
	}{
		{[]*Run{run("", "")}, "Training kernels: not recorded (runs from before bicyc recorded them)."},
		{[]*Run{run(skx, skx), run(skx)}, "Training kernels: " + skx + "."},
		{[]*Run{run(skx, hsw), run("")}, "Training kernels: " + skx + "; " + hsw + "; 1 tasks from before bicyc recorded them."},
	} {
		if got := trainedWith(&Set{Runs: c.runs}); got != c.want {
			t.Errorf("case %d: %q, want %q", i, got, c.want)
		}
	}
}
