package ops

import (
	"context"
	"runtime/pprof"
	"sync/atomic"
)

// profileLabels is set by SetProfileLabels.
var profileLabels atomic.Bool

// SetProfileLabels makes the convolution, batch-norm and max-pooling ops label their work for CPU profiles
// while on: each op's goroutine, and every goroutine it starts, carries the pprof label "op" naming the op
// and its geometry (for instance "Conv2dFilterGrad#12{x(64, 64, 32, 32) w(64, 64, 3, 3) stride 1 pad 1}") for
// the length of its Do, so that `go tool pprof -tags` splits a training step's CPU time by layer and pass,
// and `-tagfocus` profiles one of them. Off by default: labelling formats a string per op call. Safe for
// concurrent use; it replaces any labels the calling goroutine had, for the length of the op.
func SetProfileLabels(on bool) { profileLabels.Store(on) }

// labelOp labels the calling goroutine "op"=name and returns the function that removes the label.
func labelOp(name string) (restore func()) {
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("op", name)))
	return func() { pprof.SetGoroutineLabels(context.Background()) }
}
