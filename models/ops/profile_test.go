package ops

import (
	"bytes"
	"compress/gzip"
	"io"
	"runtime/pprof"
	"testing"
	"time"

	"gorgonia.org/tensor"
)

// TestProfileLabels runs a convolution's Do under a CPU profile for 0.3 s of CPU time with the labels on
// and then off: the op's label must be among the profile's strings with them on, and absent with them off.
func TestProfileLabels(t *testing.T) {
	g := convGeom{n: 8, c: 32, h: 16, w: 16, o: 32, k: 3, stride: 1, pad: 1, oh: 16, ow: 16}
	op := &convOp{geo: g, serial: 4242}
	x := tensor.New(tensor.WithShape(g.inShape()...), tensor.WithBacking(benchData(g.n*g.c*g.inPlane())))
	w := tensor.New(tensor.WithShape(g.filterShape()...), tensor.WithBacking(benchData(g.o*g.patch())))
	profile := func(on bool) []byte {
		SetProfileLabels(on)
		defer SetProfileLabels(false)
		var buf bytes.Buffer
		if err := pprof.StartCPUProfile(&buf); err != nil {
			t.Skip("a CPU profile is already running:", err)
		}
		for start := processCPU(); processCPU()-start < 300*time.Millisecond; {
			if _, err := op.Do(x, w); err != nil {
				pprof.StopCPUProfile()
				t.Fatal(err)
			}
		}
		pprof.StopCPUProfile()
		r, err := gzip.NewReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	label := []byte(op.String())
	if !bytes.Contains(profile(true), label) {
		t.Errorf("labels on: the profile has no label %q", label)
	}
	if bytes.Contains(profile(false), label) {
		t.Errorf("labels off: the profile has the label %q", label)
	}
}
