package reliability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bicyc/bicyc/bundle"
)

// runTimeout bounds one training process; the runs take about 20 s alone
// and a few times that on a loaded machine.
const runTimeout = 10 * time.Minute

var (
	referenceMu  sync.Mutex
	referenceDir string // a finished uninterrupted run, once one exists
)

// startReference starts the uninterrupted reference run, unless one has
// already finished, and returns the function that waits for it and
// returns its run directory.
func startReference(t *testing.T) func() string {
	t.Helper()
	referenceMu.Lock()
	done := referenceDir
	referenceMu.Unlock()
	if done != "" {
		return func() string { return done }
	}
	parent, err := os.MkdirTemp(sharedRoot(t), "reference-")
	if err != nil {
		t.Fatal(err)
	}
	p := startBicyc(t, trainArgs(parent, "run")...)
	return func() string {
		t.Helper()
		p.finish(t, runTimeout)
		dir := filepath.Join(parent, "run")
		referenceMu.Lock()
		referenceDir = dir
		referenceMu.Unlock()
		return dir
	}
}

// killPoint is a moment to SIGKILL a training process at: once an output
// line contains marker ("": at once), and then, when inWrite names a
// checkpoint ("task-01"), once its temporary directory has appeared, after
// a random delay below jitter. A point applies only to a run whose state satisfies when; others
// are skipped (an earlier kill may have landed after the checkpoint the
// point aims at).
type killPoint struct {
	what    string
	when    func(runView) bool
	marker  string
	inWrite string
	jitter  time.Duration
}

// Kill-point conditions: no checkpoint of task 1 yet, none of task 2 yet,
// the last one written.
var (
	beforeTask1 = func(v runView) bool { return v.Latest < 1 }
	beforeTask2 = func(v runView) bool { return v.Latest < 2 }
	trained     = func(v runView) bool { return v.Latest == 2 }
)

// checkpointJitter spans the write of a checkpoint of the test
// configuration (0.5-1.6 MB, every file and directory synced), of
// checkpoints/latest and of the metrics, which start right after the "task
// N done" line; inWriteJitter is the delay after the temporary directory
// has appeared, short enough to land inside the write.
const (
	checkpointJitter = 40 * time.Millisecond
	inWriteJitter    = 3 * time.Millisecond
)

// killPoints are the kills of one test, in order. Log lines: "task T epoch
// E/N" ends Stage I epoch E (the next one, or Stage II after the last, is
// then running), "task T done" precedes the checkpoint write, "resuming"
// starts a resumed process (which exports at once when training is done).
func killPoints() []killPoint {
	points := []killPoint{
		{"task 1 mid-epoch", beforeTask1, "task 1 epoch 1/", "", 0},
		{"task 1 checkpoint directory being written", beforeTask1, "task 1 done", "task-01", inWriteJitter},
		{"task 1 checkpoint, latest or metrics being written", beforeTask1, "task 1 done", "", checkpointJitter},
		{"task 2 mid-epoch", beforeTask2, "task 2 epoch 1/", "", 0},
		{"task 2 stage II", beforeTask2, "task 2 epoch 3/", "", 0},
		{"task 2 checkpoint directory being written", beforeTask2, "task 2 done", "task-02", inWriteJitter},
		{"task 2 checkpoint, latest or metrics being written", beforeTask2, "task 2 done", "", checkpointJitter},
		{"task 2 checkpoint, metrics or model export", beforeTask2, "task 2 done", "", 80 * time.Millisecond},
		{"model export after training", trained, "resuming", "", 50 * time.Millisecond},
	}
	if !longTests() {
		return points
	}
	// Each kill inside a checkpoint write leaves the task to train again,
	// so the task-1 points can repeat.
	long := slices.Clone(points[:2])
	for range 5 {
		long = append(long, points[1])
	}
	long = append(long, points[2], points[3], killPoint{"task 2 mid-epoch", beforeTask2, "task 2 epoch 2/", "", 0}, points[4])
	for range 5 {
		long = append(long, points[5])
	}
	long = append(long, points[6])
	// A resumed process trains task 2 in about 15 s: most of these land in
	// it, the rest after the run has finished.
	for range 10 {
		long = append(long, killPoint{"random moment of task 2", beforeTask2, "", "", 12 * time.Second})
	}
	long = append(long, points[7])
	for range 5 {
		long = append(long, points[8])
	}
	return long
}

// waitForTemporary polls the checkpoints directory ckpts until a
// temporary directory of checkpoint name that is not in seen appears, or
// the checkpoint itself does (the poll missed the write, on a loaded
// machine), or p exits, or timeout passes. It reports whether the
// temporary directory was seen.
func waitForTemporary(p *process, ckpts, name string, seen map[string]bool, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		entries, _ := os.ReadDir(ckpts)
		for _, e := range entries {
			switch {
			case strings.HasPrefix(e.Name(), "."+name+".new-") && !seen[e.Name()]:
				return true
			case e.Name() == name:
				return false
			}
		}
		select {
		case <-p.exited:
			return false
		default:
		}
		// The write takes milliseconds: poll without sleeping (a sleep
		// overshoots by that much on a loaded machine).
		runtime.Gosched()
	}
	return false
}

func randomDelay(rng *rand.Rand, jitter time.Duration) time.Duration {
	if jitter <= 0 {
		return 0
	}
	return time.Duration(rng.Int64N(int64(jitter)))
}

// TestKilledTrainingResumesExactly trains the test configuration while an
// uninterrupted reference run trains beside it, kills the first one at
// every point of killPoints, resuming it each time, checks the run
// directory after every kill, and finally checks that the resumed run's
// metrics and model equal the reference's.
func TestKilledTrainingResumesExactly(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST with the real bicyc binary")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("random delays: seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	waitReference := startReference(t)

	parent := t.TempDir()
	dir := filepath.Join(parent, "killed")
	k := killAtEveryPoint(t, parent, dir, rng)
	p := startBicyc(t, "train", "--resume", dir)
	p.finish(t, runTimeout)
	v, err := checkRunDir(dir)
	if err != nil {
		t.Fatalf("after the final resume: %v", err)
	}
	if v.Latest != 2 || v.Metrics != 2 || !v.Model {
		t.Fatalf("after the final resume: %+v, want 2 tasks in checkpoint and metrics, and a model", v)
	}
	t.Logf("survived %d kills, %d of them inside a checkpoint write (a temporary directory was left: %d leftovers in checkpoints/)",
		k.kills, k.inWrite, len(k.hidden))

	ref := waitReference()
	compareRuns(t, ref, dir)
	checkStaleMetricsResume(t, ref, k.metricsAfterTask1)
}

// killTally is what killAtEveryPoint saw.
type killTally struct {
	kills, inWrite    int             // kills, and kills that left a temporary directory
	hidden            map[string]bool // leftovers of interrupted writes in checkpoints/
	metricsAfterTask1 []byte          // metrics.json when the run stood after task 1
}

// killAtEveryPoint trains the test configuration into dir (under parent),
// kills it at every point of killPoints after rng's random delay, resumes it
// each time, and checks the run directory after every kill.
func killAtEveryPoint(t *testing.T, parent, dir string, rng *rand.Rand) killTally {
	t.Helper()
	k := killTally{hidden: map[string]bool{}}
	state := runView{Metrics: -1}
	for i, kp := range killPoints() {
		if !kp.when(state) {
			t.Logf("point %d (%s): skipped, the run is past it", i, kp.what)
			continue
		}
		args := []string{"train", "--resume", dir}
		if _, err := os.Stat(filepath.Join(dir, "config.yaml")); err != nil {
			args = trainArgs(parent, "killed")
		}
		p := startBicyc(t, args...)
		reached := kp.marker == "" || p.waitFor(kp.marker, runTimeout)
		if reached && kp.inWrite != "" && !waitForTemporary(p, filepath.Join(dir, "checkpoints"), kp.inWrite, k.hidden, runTimeout) {
			t.Logf("point %d (%s): the poll missed the temporary directory", i, kp.what)
		}
		if !reached {
			p.finish(t, runTimeout)
			t.Logf("point %d (%s): the run finished without reaching it", i, kp.what)
			continue
		}
		time.Sleep(randomDelay(rng, kp.jitter))
		killed := p.kill()
		if !killed && !p.state.Success() {
			t.Fatalf("point %d (%s): %v\n%s", i, kp.what, p.state, p.Output())
		}
		v, err := checkRunDir(dir)
		if err != nil {
			t.Fatalf("point %d (%s), killed %v: %v\noutput:\n%s", i, kp.what, killed, err, p.Output())
		}
		state = v
		var fresh []string
		for _, h := range v.Hidden {
			if !k.hidden[h] {
				k.hidden[h] = true
				fresh = append(fresh, h)
			}
		}
		if killed {
			k.kills++
			if len(fresh) > 0 {
				k.inWrite++
			}
		}
		t.Logf("point %d (%s): killed %v; latest checkpoint after task %d, metrics.json of %d tasks, model %v, new leftovers %q",
			i, kp.what, killed, v.Latest, v.Metrics, v.Model, fresh)
		if v.Latest == 1 && v.Metrics == 1 && k.metricsAfterTask1 == nil {
			if k.metricsAfterTask1, err = os.ReadFile(filepath.Join(dir, "metrics.json")); err != nil {
				t.Fatal(err)
			}
		}
	}
	return k
}

// compareRuns checks that the resumed run in dir has the reference run's
// metrics, model and accuracy matrices.
func compareRuns(t *testing.T, ref, dir string) {
	t.Helper()
	compareMetrics(t, filepath.Join(ref, "metrics.json"), filepath.Join(dir, "metrics.json"))
	compareModels(t, filepath.Join(ref, "model"), filepath.Join(dir, "model"))
	for _, name := range []string{"acc_tag.csv", "acc_taw.csv"} {
		a, _ := os.ReadFile(filepath.Join(ref, name))
		b, _ := os.ReadFile(filepath.Join(dir, name))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs: %q uninterrupted, %q resumed", name, a, b)
		}
	}
}

// checkStaleMetricsResume resumes a copy of the reference run whose
// metrics.json is that of task 1 (metricsAfterTask1) beside the checkpoint
// of task 2, and checks that it ends with the reference's metrics.
func checkStaleMetricsResume(t *testing.T, ref string, metricsAfterTask1 []byte) {
	t.Helper()
	// A kill between the checkpoint of the last task and the write of
	// metrics.json leaves the new checkpoint with the previous task's
	// metrics. Build that state exactly, from the reference run and the
	// metrics seen after task 1, and resume it.
	if metricsAfterTask1 == nil {
		t.Fatal("no kill left the run after task 1 with its metrics")
	}
	stale := filepath.Join(t.TempDir(), "stale")
	if err := os.CopyFS(stale, os.DirFS(ref)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(stale, "model")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "metrics.json"), metricsAfterTask1, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startBicyc(t, "train", "--resume", stale)
	p.finish(t, runTimeout)
	compareMetrics(t, filepath.Join(ref, "metrics.json"), filepath.Join(stale, "metrics.json"))
	b, err := bundle.Open(filepath.Join(stale, "model"))
	if err != nil {
		t.Fatal(err)
	}
	var embedded struct {
		Completed int `json:"completed_tasks"`
	}
	if err := json.Unmarshal(b.Manifest.Metrics, &embedded); err != nil || embedded.Completed != 2 {
		t.Errorf("the model exported after resuming embeds metrics of %d tasks (%v), want 2", embedded.Completed, err)
	}
}

// exportKill runs `bicyc export --run run --out out`, SIGKILLs it after
// delay and reports whether the kill ended it (false: it had finished).
func exportKill(t *testing.T, run, out string, delay time.Duration) bool {
	t.Helper()
	p := startBicyc(t, "export", "--run", run, "--out", out)
	time.Sleep(delay)
	killed := p.kill()
	if !killed && !p.state.Success() {
		t.Fatalf("export: %v\n%s", p.state, p.Output())
	}
	return killed
}

// modelState says which model a directory holds: "absent", or the name of
// the entry of models whose files (names, sizes, SHA-256) it has exactly.
// A directory that exists but fails bundle.Open, or matches none, is an
// error.
func modelState(dir string, models map[string]*bundle.Bundle) (string, error) {
	if _, err := os.Lstat(dir); os.IsNotExist(err) {
		return "absent", nil
	}
	b, err := bundle.Open(dir)
	if err != nil {
		return "", fmt.Errorf("half-written model directory: %w", err)
	}
	for name, m := range models {
		if reflect.DeepEqual(m.Manifest.Files, b.Manifest.Files) {
			return name, nil
		}
	}
	return "", fmt.Errorf("model directory %s opens but holds neither model", dir)
}

// hiddenEntries counts the dot-prefixed entries of dir whose names start
// with prefix: the temporary directories of interrupted writes.
func hiddenEntries(t *testing.T, dir, prefix string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			n++
		}
	}
	return n
}

// TestInterruptedExportKeepsModel kills `bicyc export` at random moments,
// first into a path with no model directory (afterwards there must be none
// or the complete new model), then into a model directory holding an older
// model of the same run (afterwards it must hold the old model or the new
// one, exactly).
func TestInterruptedExportKeepsModel(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Fashion-MNIST with the real bicyc binary")
	}
	ref := startReference(t)()
	seed := uint64(time.Now().UnixNano())
	t.Logf("random delays: seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	// The older model: the same run exported as of task 1.
	older := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(older, os.DirFS(ref)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(older, "checkpoints", "latest"), []byte("task-01\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	oldModel := filepath.Join(work, "old")
	start := time.Now()
	startBicyc(t, "export", "--run", older, "--out", oldModel).finish(t, time.Minute)
	exportTime := time.Since(start)
	models := map[string]*bundle.Bundle{}
	for name, dir := range map[string]string{"old": oldModel, "new": filepath.Join(ref, "model")} {
		b, err := bundle.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		models[name] = b
	}
	t.Logf("an uninterrupted export takes %v; kills come after up to 1.2 times that", exportTime)

	n := 12
	if longTests() {
		n = 100
	}
	counts := map[string]int{}
	for i := range n {
		withOld := i%2 == 1
		out := filepath.Join(work, fmt.Sprintf("model-%d", i))
		if withOld {
			if err := os.CopyFS(out, os.DirFS(oldModel)); err != nil {
				t.Fatal(err)
			}
		}
		before := hiddenEntries(t, work, ".")
		killed := exportKill(t, ref, out, randomDelay(rng, exportTime*6/5))
		state, err := modelState(out, models)
		switch {
		case err != nil:
			t.Fatalf("kill %d: %v", i, err)
		case withOld && state == "absent":
			t.Fatalf("kill %d: the previous model directory is gone (%d hidden entries beside it: the kill fell between the two renames of bundle.Write)",
				i, hiddenEntries(t, work, "."))
		case !withOld && state == "old":
			t.Fatalf("kill %d: a fresh export produced the older model", i)
		}
		switch {
		case !killed:
			counts["finished before the kill"]++
		case hiddenEntries(t, work, ".") > before:
			counts["killed inside the write (temporary directory left)"]++
		default:
			counts["killed before or after the write"]++
		}
		counts["left "+state]++
	}
	t.Logf("%d export kills: %v", n, counts)
}
