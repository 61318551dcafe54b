package rundir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bicyc/bicyc/bounded"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/lockfile"
)

// The layout: <run>/checkpoints/task-NN holds the state after NN tasks,
// and <run>/checkpoints/latest names the newest one.
const (
	CheckpointsDir = "checkpoints"
	LatestFile     = "latest"
)

// LockFile is a run's writer lock, <run>/.lock (package lockfile): one
// process at a time trains, resumes, learns or exports a run in place.
const LockFile = ".lock"

// ErrBusy is wrapped when another live process holds a run's lock; the
// error names it (pid, host, since when, command).
var ErrBusy = errors.New("another process is writing the run")

// Lock takes the writer lock of the run in runDir, which must exist. A
// live holder is waited for up to wait, and then the error wraps ErrBusy
// and lockfile.ErrHeld and names it; status receives a line when the
// wait starts and when the lock of a dead holder is taken over. The
// returned context is cancelled if another process takes the lock over
// (lockfile.ErrLost). Release the lock when the run is closed. A process
// that holds the lock already (a run it has open, exported in place) gets
// a nil lock, whose Release does nothing: the lock keeps other processes
// out, not this one's own code.
func Lock(runDir string, wait time.Duration, status io.Writer) (*lockfile.Lock, context.Context, error) {
	path := filepath.Join(runDir, LockFile)
	if held, ok := lockfile.Holder(path); ok && held.ThisProcess() {
		return nil, context.Background(), nil
	}
	opts := lockfile.Options{Wait: wait, Waiting: func(o lockfile.Owner) {
		fmt.Fprintf(status, "waiting up to %s for run %s: %s writes it\n", wait, runDir, o)
	}}
	l, ctx, took, err := lockfile.Acquire(context.Background(), path, opts)
	if errors.Is(err, lockfile.ErrHeld) {
		hint := "wait for it (Options.Wait), or stop it"
		if wait > 0 {
			hint = fmt.Sprintf("waited %s", wait)
		}
		return nil, nil, fmt.Errorf("run %s: %w: %w; %s", runDir, ErrBusy, err, hint)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", runDir, err)
	}
	if took != "" {
		fmt.Fprintf(status, "run %s: %s\n", runDir, took)
	}
	return l, ctx, nil
}

// RemoveTemp removes the temporary files that a process killed while it
// wrote the run in runDir left (".stream.json.tmp*", ".metrics.json.tmp*",
// "checkpoints/.latest.tmp*", ...; durable.RemoveTemp) and returns their
// paths. Call it holding the run's lock (Lock): no other writer is at work.
// The ".task-NN.new-*" of an interrupted checkpoint are cleared by the next
// checkpoint's write (durable.Recover).
func RemoveTemp(runDir string) ([]string, error) {
	var removed []string
	for _, dir := range []string{runDir, filepath.Join(runDir, CheckpointsDir)} {
		r, err := durable.RemoveTemp(dir)
		removed = append(removed, r...)
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// maxSmallFile bounds the small files read here (latest, manifest.json).
const maxSmallFile = 16 << 20

// CheckpointName is the folder name of the checkpoint after completed
// tasks: task-01, task-02, ...
func CheckpointName(completed int) string { return fmt.Sprintf("task-%02d", completed) }

// LatestCompleted returns how many tasks the newest checkpoint of the run
// in runDir holds (the one checkpoints/latest names), and false when the
// run has none.
func LatestCompleted(runDir string) (int, bool, error) {
	b, err := bounded.ReadFile(filepath.Join(runDir, CheckpointsDir, LatestFile), maxSmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	name := strings.TrimSpace(string(b))
	n, err := strconv.Atoi(strings.TrimPrefix(name, "task-"))
	if err != nil || !strings.HasPrefix(name, "task-") || n < 1 {
		return 0, false, fmt.Errorf("%s: %q does not name a checkpoint", filepath.Join(runDir, CheckpointsDir, LatestFile), name)
	}
	return n, true, nil
}

// Behind says that a model directory holds fewer tasks than its run's
// newest checkpoint.
type Behind struct {
	Run, Model           string
	ModelTasks, RunTasks int
}

// String says what is wrong and the repair.
func (b Behind) String() string {
	return fmt.Sprintf("model directory %s holds %d tasks, but its run %s has learned %d (a train or learn was interrupted before its export); `bicyc export --run %s` brings the model up to date",
		b.Model, b.ModelTasks, b.Run, b.RunTasks, b.Run)
}

// Check compares the model directory modelDir with the newest checkpoint
// of the run in runDir. It returns nil when the model holds as many tasks
// as the checkpoint, and also when either has none (never exported, or
// nothing trained yet). The model is read from its manifest alone, not
// verified.
func Check(runDir, modelDir string) (*Behind, error) {
	completed, ok, err := LatestCompleted(runDir)
	if err != nil || !ok {
		return nil, err
	}
	b, err := bounded.ReadFile(filepath.Join(modelDir, bundle.ManifestFile), maxSmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m struct {
		Tasks [][]int `json:"tasks"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(modelDir, bundle.ManifestFile), err)
	}
	if len(m.Tasks) >= completed {
		return nil, nil
	}
	return &Behind{Run: runDir, Model: modelDir, ModelTasks: len(m.Tasks), RunTasks: completed}, nil
}

// CheckModel is Check for a model directory in the default place of an
// export, <run>/model: the run is modelDir's parent when that holds a run's
// checkpoints. A model directory anywhere else (export.dir, a copy) has no
// run to compare with: nil.
func CheckModel(modelDir string) (*Behind, error) {
	abs, err := filepath.Abs(modelDir)
	if err != nil {
		return nil, err
	}
	run := filepath.Dir(abs)
	if _, err := os.Stat(filepath.Join(run, CheckpointsDir, LatestFile)); err != nil {
		return nil, nil
	}
	b, err := Check(run, modelDir)
	if b != nil {
		b.Run = filepath.Join(modelDir, "..")
	}
	return b, err
}
