package infer

import (
	"context"
	"errors"
	"image"
	"reflect"
	"testing"
	"time"
)

// cancelBatch is the batch the cancellation tests classify: large enough
// that ONNX Runtime's run of the fixture's convnet takes hundreds of times
// longer than everything around it (stacking the inputs, starting the
// run), so an early return is plain in a ratio measured in one process.
const cancelBatch = 512

// withRunStarting replaces the hook called before a cancellable run of ctx
// enters ONNX Runtime, for this test only.
func withRunStarting(t *testing.T, target context.Context, f func(terminated <-chan struct{})) {
	t.Helper()
	saved := runStarting
	runStarting = func(ctx context.Context, terminated <-chan struct{}) {
		if ctx == target {
			f(terminated)
		}
	}
	t.Cleanup(func() { runStarting = saved })
}

// TestClassifyCancelled: a context cancelled when the run starts stops a
// long classification in ONNX Runtime (the terminate flag of its run
// options), long before the same batch finishes uncancelled; a context
// cancelled before the call stops it before any run; the Classifier then
// classifies as before.
func TestClassifyCancelled(t *testing.T) {
	f := loadFixture(t)
	c := openCPU(t, f.twoTasks)
	in, err := c.Prepare(fashionImage(f.test, 0))
	if err != nil {
		t.Fatal(err)
	}
	inputs := make([]Input, cancelBatch)
	for i := range inputs {
		inputs[i] = in
	}

	start := time.Now()
	want, err := c.ClassifyInputs(context.Background(), inputs)
	full := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}

	// Cancelled before the call: no run starts.
	before, cancel := context.WithCancel(context.Background())
	cancel()
	withRunStarting(t, before, func(<-chan struct{}) { t.Error("a run started under a cancelled context") })
	if _, err := c.ClassifyInputs(before, inputs); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before the call: error %v, want context.Canceled", err)
	}
	if _, err := c.ClassifyBatch(before, []image.Image{fashionImage(f.test, 0)}); !errors.Is(err, context.Canceled) {
		t.Errorf("ClassifyBatch cancelled before the call: error %v, want context.Canceled", err)
	}

	// Cancelled as the run starts: the context was live when checked, so
	// only ONNX Runtime's terminate flag can stop the run.
	during, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := false
	withRunStarting(t, during, func(terminated <-chan struct{}) {
		started = true
		cancel()
		<-terminated
	})
	start = time.Now()
	_, err = c.ClassifyInputs(during, inputs)
	stopped := time.Since(start)
	if !started {
		t.Fatal("the run never started")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled at the start of the run: error %v, want context.Canceled", err)
	}
	t.Logf("batch of %d: %v uncancelled, stopped after %v", cancelBatch, full, stopped)
	if stopped > full/4 {
		t.Errorf("the cancelled run took %v, the whole batch %v: cancellation did not stop it", stopped, full)
	}

	// Later calls, cancellable ones included, run in full.
	live, cancelLive := context.WithCancel(context.Background())
	defer cancelLive()
	got, err := c.ClassifyInputs(live, inputs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Error("results after a cancelled run differ from the first run's")
	}
}

// TestOpenCancelled: Open under a done context returns its error and
// leaves nothing open.
func TestOpenCancelled(t *testing.T) {
	f := loadFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, err := Open(ctx, f.twoTasks, WithProvider(ProviderCPU))
	if !errors.Is(err, context.Canceled) || c != nil {
		t.Fatalf("Open under a cancelled context: %v, %v", c, err)
	}
	deadline, cancelDeadline := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelDeadline()
	if _, err := Open(deadline, f.twoTasks, WithProvider(ProviderCPU)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Open past its deadline: %v", err)
	}
}

// TestSentinels: each kind of bad input wraps the sentinel a caller
// branches on.
func TestSentinels(t *testing.T) {
	f := loadFixture(t)
	c := openCPU(t, f.twoTasks)
	ctx := context.Background()
	for i, tc := range []struct {
		err  error
		want error
	}{
		{func() error { _, err := c.Classify(ctx, nil); return err }(), ErrNilImage},
		{func() error { _, err := c.Prepare(nil); return err }(), ErrNilImage},
		{func() error { _, err := c.ClassifyInputs(ctx, []Input{{}}); return err }(), ErrInputShape},
		{func() error { _, err := c.Scores(ctx, []Input{{x: make([]float32, 5)}}); return err }(), ErrInputShape},
		{func() error { _, err := c.Transport(ctx, [][]float32{{1, 2}}); return err }(), ErrInputShape},
		{func() error { _, err := c.PrepareFile(t.TempDir()); return err }(), ErrNotRegular},
		{func() error { _, err := Open(ctx, f.twoTasks, WithThreads(-1)); return err }(), ErrInvalidOptions},
		{func() error { _, err := Open(ctx, f.twoTasks, WithUnknownThreshold(-1)); return err }(), ErrInvalidOptions},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("case %d: error %v, want %v", i, tc.err, tc.want)
		}
	}
}

// TestOpenCancelledWhileCreating: Open returns its context's error while
// ONNX Runtime is still creating sessions, and the sessions created
// meanwhile are released once ONNX Runtime hands them over.
func TestOpenCancelledWhileCreating(t *testing.T) {
	f := loadFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	released := make(chan int, 1)
	savedCreating, savedAbandoned := creatingSessions, sessionsAbandoned
	creatingSessions = func() { cancel(); <-release }
	sessionsAbandoned = func(n int) { released <- n }
	t.Cleanup(func() { creatingSessions, sessionsAbandoned = savedCreating, savedAbandoned })

	c, err := Open(ctx, f.twoTasks, WithProvider(ProviderCPU))
	if !errors.Is(err, context.Canceled) || c != nil {
		t.Fatalf("Open cancelled while creating sessions: %v, %v", c, err)
	}
	close(release) // ONNX Runtime finishes what it was building
	select {
	case n := <-released:
		if n != 3 {
			t.Errorf("%d sessions released, want the 3 of a two-task model", n)
		}
	case <-time.After(time.Minute):
		t.Fatal("the sessions of the cancelled Open were never released")
	}
}
