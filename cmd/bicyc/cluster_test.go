package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/bicyc/bicyc/kernels"
	"github.com/bicyc/bicyc/sweep"
)

// slurmTest runs TestSweepOnSlurm, which needs a running Slurm cluster
// (make test-slurm starts one with scripts/slurm-local.sh).
var slurmTest = flag.Bool("slurm", false, "run the sweep on the Slurm cluster of $SLURM_CONF (make test-slurm)")

// workerEnv makes the test binary run bicyc's main instead of the tests,
// so that tests can start bicyc processes: workers, and Slurm's jobs.
const workerEnv = "BICYC_TEST_RUN_MAIN"

// TestMain runs the tests on the OpenBLAS kernels bicyc chooses (kernels.Ensure), or bicyc's main.
func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		main()
		os.Exit(0)
	}
	if _, err := kernels.Ensure(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	code := m.Run()
	if reference.dir != "" {
		os.RemoveAll(filepath.Dir(reference.dir))
	}
	os.Exit(code)
}

// smokeSweep is the sweep definition the cluster tests run.
const smokeSweep = "../../configs/sweeps/smoke.yaml"

// reference is the smoke sweep run in one process, which every way of
// spreading it over processes must reproduce bit for bit.
var reference struct {
	once sync.Once
	dir  string
	err  error
}

func referenceSweep(t *testing.T) string {
	t.Helper()
	reference.once.Do(func() {
		tmp, err := os.MkdirTemp("", "bicyc-reference-")
		if err != nil {
			reference.err = err
			return
		}
		reference.dir = filepath.Join(tmp, "smoke")
		_, _, reference.err = bicyc(context.Background(), "sweep", "--sweep", smokeSweep, "--out", reference.dir)
	})
	if reference.err != nil {
		t.Fatalf("the one-process smoke sweep: %v", reference.err)
	}
	return reference.dir
}

// bicyc runs the command line args in this process.
func bicyc(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err = root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// worker starts bicyc with args in a process of its own.
func worker(t *testing.T, ctx context.Context, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), workerEnv+"=1")
	return cmd
}

// sweepNumbers returns what training determined in a sweep directory:
// every run's metrics.json and the groups and runs of summary.json, with
// times left out and trained_in reduced to the run's name (the sweeps
// live in different directories). JSON numbers are written in the
// shortest form that reads back to the same float64, so equal values are
// equal bit for bit.
func sweepNumbers(t *testing.T, dir string) map[string]any {
	t.Helper()
	read := func(path string) any {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return withoutTimes(v)
	}
	nums := map[string]any{}
	summary := read(filepath.Join(dir, "summary.json")).(map[string]any)
	nums["summary.json groups"], nums["summary.json runs"] = summary["groups"], summary["runs"]
	for _, r := range summary["runs"].([]any) {
		name := r.(map[string]any)["name"].(string)
		nums[name+"/metrics.json"] = read(filepath.Join(dir, name, "metrics.json"))
	}
	return nums
}

// withoutTimes drops every key of v that measures time or speed and
// reduces trained_in to a base name.
func withoutTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			switch {
			case strings.HasSuffix(k, "_seconds"), strings.HasSuffix(k, "per_second"):
			case k == "trained_in":
				m[k] = filepath.Base(e.(string))
			default:
				m[k] = withoutTimes(e)
			}
		}
		return m
	case []any:
		for i := range x {
			x[i] = withoutTimes(x[i])
		}
	}
	return v
}

// checkSameNumbers fails the test for every file whose numbers differ
// between the sweeps in want and got.
func checkSameNumbers(t *testing.T, want, got string) {
	t.Helper()
	a, b := sweepNumbers(t, want), sweepNumbers(t, got)
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(a) != len(b) || len(a) < 3 {
		t.Errorf("%d files of numbers, the one-process sweep has %d", len(b), len(a))
	}
	for i, k := range keys {
		if !reflect.DeepEqual(a[k], b[k]) {
			wa, _ := json.Marshal(a[k])
			wb, _ := json.Marshal(b[k])
			t.Errorf("case %d (%s) differs from the one-process sweep's:\n%s\n%s", i, k, wb, wa)
		}
	}
}

// waitFor polls cond every 50 ms until it holds or the timeout passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}

// TestSweepCells runs the smoke sweep as separate worker processes, one
// cell each: two workers started at once on the same cell (exactly one
// trains it), a worker killed after task 1 (the next one takes its lock
// over and resumes), a cell that fails (listed by --status and the report)
// and then runs, and the rest; then checks that bicyc report merges the
// directories into the numbers of the one-process sweep, bit for bit.
func TestSweepCells(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the smoke sweep twice")
	}
	ref := referenceSweep(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "smoke")
	plan, _, err := bicyc(ctx, "sweep", "--sweep", smokeSweep, "--out", out, "--plan")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"finetune-s0", "cell 0 bicyc-s0: task 1 (fork)", "cell 2 bicyc-s1: task 1 (fork)"} {
		if !strings.Contains(plan, line) {
			t.Errorf("the plan lacks %q:\n%s", line, plan)
		}
	}

	// 1. Two workers on cell 0 at once.
	var logs [2]bytes.Buffer
	var errs [2]error
	var wg sync.WaitGroup
	for i := range 2 {
		cmd := worker(t, ctx, "sweep", "--out", out, "--cell", "0")
		cmd.Stderr = &logs[i]
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = cmd.Run() }()
	}
	wg.Wait()
	trained := 0
	for i := range 2 {
		switch {
		case errs[i] == nil && strings.Contains(logs[i].String(), "task 2 done"):
			trained++
		case errs[i] != nil && strings.Contains(logs[i].String(), "held by another writer: pid "):
		default:
			t.Errorf("worker %d: %v\n%s", i, errs[i], tail(logs[i].String()))
		}
	}
	if trained != 1 {
		t.Fatalf("%d workers trained cell 0, want exactly 1", trained)
	}

	// 2. A worker on cell 2 killed in task 2.
	killed := worker(t, ctx, "sweep", "--out", out, "--cell", "2")
	stderr, err := killed.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	sawTask1 := false
	// Task 2 starts after task 1's checkpoint and metrics are written.
	for s := bufio.NewScanner(stderr); s.Scan(); {
		if strings.HasPrefix(s.Text(), "task 2/2") {
			sawTask1 = true
			killed.Process.Signal(syscall.SIGKILL)
			break
		}
	}
	err = killed.Wait()
	var exit *exec.ExitError
	if !sawTask1 || !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the worker on cell 2 was not killed after task 1 (%v)", err)
	}
	rec, err := sweep.ReadStatus(out)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Runs[2].Status != sweep.StatusStopped {
		t.Errorf("the killed cell is %s, want stopped", rec.Runs[2].Status)
	}
	_, log, err := bicyc(ctx, "sweep", "--out", out, "--cell", "2")
	want := fmt.Sprintf("cell 2 bicyc-s1: took over the lock of pid %d", killed.Process.Pid)
	if err != nil || !strings.Contains(log, want) || !strings.Contains(log, "cell 2 bicyc-s1: resuming after task 1") {
		t.Fatalf("the next worker on cell 2: %v, want %q and a resume:\n%s", err, want, tail(log))
	}

	// 3. A cell that fails (its data directory is missing) shows as failed
	// in --status and the report, and runs once the cause is fixed.
	frozen := filepath.Join(out, sweep.CellsDir, "finetune-s1.yaml")
	good, err := os.ReadFile(frozen)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(good), "/fashion-mnist\n", "/fashion-mnist-missing\n", 1)
	if bad == string(good) {
		t.Fatalf("%s names no fashion-mnist directory", frozen)
	}
	if err := os.WriteFile(frozen, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := bicyc(ctx, "sweep", "--out", out, "--cell", "3"); err == nil || !strings.Contains(err.Error(), "fashion-mnist-missing") {
		t.Fatalf("cell 3 without its data: %v", err)
	}
	status, _, err := bicyc(ctx, "sweep", "--out", out, "--status")
	if err != nil || !strings.Contains(status, "cell 3 finetune-s1: failed: ") || !strings.Contains(status, "fashion-mnist-missing") {
		t.Errorf("status after a failed cell: %v\n%s", err, status)
	}
	if _, _, err := bicyc(ctx, "report", out); err != nil {
		t.Fatal(err)
	}
	if md, err := os.ReadFile(filepath.Join(out, "report.md")); err != nil || !strings.Contains(string(md), "- finetune-s1: failed: ") {
		t.Errorf("report.md does not list the failed cell (%v)", err)
	}
	if err := os.WriteFile(frozen, good, 0o644); err != nil {
		t.Fatal(err)
	}

	// 4. The forks, in parallel.
	for _, cell := range []string{"1", "3"} {
		cmd := worker(t, ctx, "sweep", "--out", out, "--cell", cell)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("cell %s: %v\n%s", cell, err, tail(string(b)))
			}
		}()
	}
	wg.Wait()
	status, _, err = bicyc(ctx, "sweep", "--out", out, "--status")
	if err != nil || !strings.Contains(status, "4 cells: 4 finished") {
		t.Errorf("status: %v\n%s", err, status)
	}
	if _, _, err := bicyc(ctx, "report", out); err != nil {
		t.Fatal(err)
	}
	checkSameNumbers(t, ref, out)
}

// TestSweepOnSlurm submits the smoke sweep to a real Slurm cluster
// (--submit slurm; make test-slurm starts one), waits for its job arrays,
// and checks that the report merged from the run directories equals the
// one-process sweep's, bit for bit.
func TestSweepOnSlurm(t *testing.T) {
	if !*slurmTest {
		t.Skip("needs a Slurm cluster: make test-slurm")
	}
	if os.Getenv("SLURM_CONF") == "" {
		t.Fatal("-slurm without SLURM_CONF: run make test-slurm")
	}
	ref := referenceSweep(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "smoke")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The jobs run this test binary as bicyc: sbatch passes the environment on.
	t.Setenv(workerEnv, "1")
	stdout, _, err := bicyc(ctx, "sweep", "--sweep", smokeSweep, "--out", out, "--submit", "slurm", "--bicyc", exe, "--cpus-per-task", "1", "--time", "10:00")
	os.Unsetenv(workerEnv)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for _, line := range strings.Split(stdout, "\n") {
		var wave int
		var id string
		if n, _ := fmt.Sscanf(line, "wave %d: job %s", &wave, &id); n == 2 {
			jobs = append(jobs, id)
		}
	}
	if len(jobs) != 2 {
		t.Fatalf("submitted %v, want two job arrays (task 1 runs, then their forks):\n%s", jobs, stdout)
	}
	// Wait until Slurm no longer lists the jobs.
	waitFor(t, "the job arrays "+strings.Join(jobs, ", "), 9*time.Minute, func() bool {
		b, err := exec.CommandContext(ctx, "squeue", "-h", "-j", strings.Join(jobs, ",")).Output()
		return err == nil && strings.TrimSpace(string(b)) == ""
	})
	status, _, err := bicyc(ctx, "sweep", "--out", out, "--status")
	if err != nil || !strings.Contains(status, "4 cells: 4 finished") {
		for i := range 4 {
			b, _ := os.ReadFile(filepath.Join(out, sweep.CellLog(i)))
			t.Logf("%s:\n%s", sweep.CellLog(i), tail(string(b)))
		}
		t.Fatalf("after the jobs: %v\n%s", err, status)
	}
	for i := range 4 {
		if b, err := os.ReadFile(filepath.Join(out, sweep.CellLog(i))); err != nil || !strings.Contains(string(b), "task 2 done") {
			t.Errorf("%s: the cell's log does not show its training (%v)", sweep.CellLog(i), err)
		}
	}
	if _, _, err := bicyc(ctx, "report", out); err != nil {
		t.Fatal(err)
	}
	checkSameNumbers(t, ref, out)
}

// TestEmitKubernetesSmoke writes the smoke sweep's manifests with the
// command line and decodes each strictly into the Kubernetes API's Go
// types (k8s.io/api; unknown or mistyped fields are errors): two Indexed
// Jobs of two completions, task-1 runs first, and the claim.
func TestEmitKubernetesSmoke(t *testing.T) {
	out := filepath.Join(t.TempDir(), "smoke")
	stdout, _, err := bicyc(context.Background(), "sweep", "--sweep", smokeSweep, "--out", out, "--emit", "k8s",
		"--image", "registry.example/bicyc:1", "--claim-size", "10Gi", "--cpu", "2", "--memory", "4Gi")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "then run: bash "+filepath.Join(out, "k8s", "apply.sh")) {
		t.Errorf("output:\n%s", stdout)
	}
	read := func(name string, v any) {
		b, err := os.ReadFile(filepath.Join(out, "k8s", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := k8syaml.UnmarshalStrict(b, v); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, b)
		}
	}
	var claim corev1.PersistentVolumeClaim
	read("claim.yaml", &claim)
	if claim.Name != "bicyc-sweeps" || claim.Spec.AccessModes[0] != corev1.ReadWriteMany {
		t.Errorf("claim %+v", claim)
	}
	plan, err := sweep.ReadPlan(out)
	if err != nil {
		t.Fatal(err)
	}
	for w, cells := range plan.Waves() {
		var job batchv1.Job
		read(fmt.Sprintf("wave-%d.yaml", w), &job)
		c := job.Spec.Template.Spec.Containers[0]
		if *job.Spec.CompletionMode != batchv1.IndexedCompletion || int(*job.Spec.Completions) != len(cells) || len(cells) != 2 ||
			!slices.Contains(c.Args, "/sweeps/smoke") || c.Resources.Requests.Cpu().String() != "2" {
			t.Errorf("wave %d (cells %v): %+v", w, cells, job.Spec)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "k8s", "wave-2.yaml")); !os.IsNotExist(err) {
		t.Errorf("a third wave for a sweep of two (%v)", err)
	}
}
