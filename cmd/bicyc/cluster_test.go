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

	twoWorkersOneCell(t, ctx, out)
	killedWorkerResumes(t, ctx, out)
	failedCellReported(t, ctx, out)
	forksInParallel(t, ctx, out)
	status, _, err := bicyc(ctx, "sweep", "--out", out, "--status")
	if err != nil || !strings.Contains(status, "4 cells: 4 finished") {
		t.Errorf("status: %v\n%s", err, status)
	}
	if _, _, err := bicyc(ctx, "report", out); err != nil {
		t.Fatal(err)
	}
	checkSameNumbers(t, ref, out)
}

// twoWorkersOneCell (TestSweepCells, step 1): two workers start cell 0 at once; exactly one
// trains it, the other is refused naming the holder.
func twoWorkersOneCell(t *testing.T, ctx context.Context, out string) {
	t.Helper()
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
}

// killedWorkerResumes (TestSweepCells, step 2): a worker on cell 2 killed in task 2 leaves it
// stopped; the next worker takes over its lock and resumes after task 1.
func killedWorkerResumes(t *testing.T, ctx context.Context, out string) {
	t.Helper()
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
}

// failedCellReported (TestSweepCells, step 3): a cell that fails (its data directory is
// missing) shows as failed in --status and the report, and runs once the cause is fixed.
func failedCellReported(t *testing.T, ctx context.Context, out string) {
	t.Helper()
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
	if err == nil || !strings.Contains(err.Error(), "1 of 4 cells failed") ||
		!strings.Contains(status, "cell 3 finetune-s1: failed: ") || !strings.Contains(status, "fashion-mnist-missing") {
		t.Errorf("status after a failed cell (want it listed, and an error): %v\n%s", err, status)
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
}

// forksInParallel (TestSweepCells, step 4): the forks, cells 1 and 3, run in parallel.
func forksInParallel(t *testing.T, ctx context.Context, out string) {
	t.Helper()
	var wg sync.WaitGroup
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
	jobs := submittedJobs(stdout)
	if len(jobs) != 3 || !strings.Contains(stdout, "wave 0 cells 0,2: job ") || !strings.Contains(stdout, "wave 1 cells 1,3: job ") {
		t.Fatalf("submitted %v, want two job arrays (task 1 runs, then their forks) and the report job:\n%s", jobs, stdout)
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

// submittedJobs are the job ids bicyc sweep --submit printed: the arrays',
// then the report job's.
func submittedJobs(stdout string) []string {
	var jobs []string
	for _, line := range strings.Split(stdout, "\n") {
		if _, id, ok := strings.Cut(line, ": job "); ok && (strings.HasPrefix(line, "wave ") || strings.HasPrefix(line, "report")) {
			jobs = append(jobs, strings.Fields(id)[0])
		}
	}
	return jobs
}

// TestSweepFailuresOnSlurm submits the smoke sweep with 3 seeds to a real
// Slurm with --max-parallel 1 through a wrapper that cannot run bicyc for
// cell 2 (the binary missing on the node), and cancels cell 4's task while
// it waits, and cell 1's data goes missing before it starts: a missing
// --bicyc is refused at submit; the cells of wave 0 run one after the
// other; cell 1 still runs after cell 0 (its own source) and fails, while
// the cells that start from cells 2 and 4 never run; --status names cell 1
// (bicyc's error) and cell 2 (the reason from its task's exit record) as
// failed with their jobs and logs, and exits non-zero; cells/*.json hold the job ids;
// the report job runs once every array has ended and writes report.md.
func TestSweepFailuresOnSlurm(t *testing.T) {
	if !*slurmTest {
		t.Skip("needs a Slurm cluster: make test-slurm")
	}
	if os.Getenv("SLURM_CONF") == "" {
		t.Fatal("-slurm without SLURM_CONF: run make test-slurm")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	out := filepath.Join(dir, "smoke")
	jobs := submitWithFailingCell(t, ctx, dir, out)
	// Cell 4 waits for its turn behind cell 0 (--max-parallel 1).
	if b, err := exec.CommandContext(ctx, "scancel", jobs[0]+"_4").CombinedOutput(); err != nil {
		t.Fatalf("scancel %s_4: %v %s", jobs[0], err, b)
	}
	// Cell 1 starts once cell 0 has trained: by then its data directory
	// is missing, so bicyc records its failure.
	frozen := filepath.Join(out, sweep.CellsDir, "finetune-s0.yaml")
	good, err := os.ReadFile(frozen)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(frozen, []byte(strings.Replace(string(good), "/fashion-mnist\n", "/fashion-mnist-missing\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the jobs "+strings.Join(jobs, ", "), 7*time.Minute, func() bool {
		b, err := exec.CommandContext(ctx, "squeue", "-h", "-j", strings.Join(jobs, ",")).Output()
		return err == nil && strings.TrimSpace(string(b)) == ""
	})
	checkFailedCells(t, ctx, out, jobs)
	// --max-parallel 1: cell 2's task started after cell 0's ended.
	s0, e0 := cellSpan(out, 0)
	s2, e2 := cellSpan(out, 2)
	if s0 == "" || e0 == "" || s2 == "" || e2 == "" || (s2 < e0 && s0 < e2) {
		t.Errorf("with --max-parallel 1, cell 0 ran %s-%s and cell 2 %s-%s", s0, e0, s2, e2)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !strings.Contains(string(report), "bicyc-s1") {
		b, _ := os.ReadFile(filepath.Join(out, sweep.LogsDir, "report.log"))
		t.Errorf("report job: report.md %v\nlogs/report.log:\n%s", err, b)
	}
}

// submitWithFailingCell (TestSweepFailuresOnSlurm): a --bicyc that does
// not exist is refused; then the smoke sweep with 3 seeds is submitted
// through a wrapper in dir that runs this test binary, except for cell 2,
// which gets a binary that does not exist. It returns the job ids: the two
// arrays and the report job.
func submitWithFailingCell(t *testing.T, ctx context.Context, dir, out string) []string {
	t.Helper()
	if _, _, err := bicyc(ctx, "sweep", "--sweep", smokeSweep, "--out", out, "--submit", "slurm", "--bicyc", "/nonexistent/bicyc"); err == nil ||
		!strings.Contains(err.Error(), "/nonexistent/bicyc") {
		t.Fatalf("--bicyc /nonexistent/bicyc: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "bicyc")
	script := fmt.Sprintf("#!/bin/sh\ncase \" $* \" in *\" --cell 2 \"*) exec /nonexistent/bicyc \"$@\" ;; esac\nexec %s \"$@\"\n", exe)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(workerEnv, "1")
	stdout, _, err := bicyc(ctx, "sweep", "--sweep", smokeSweep, "--seeds", "3", "--out", out, "--submit", "slurm", "--bicyc", wrapper,
		"--cpus-per-task", "1", "--time", "10:00", "--max-parallel", "1")
	os.Unsetenv(workerEnv)
	if err != nil {
		t.Fatal(err)
	}
	jobs := submittedJobs(stdout)
	if len(jobs) != 3 || !strings.Contains(stdout, "wave 0 cells 0,2,4: job "+jobs[0]) || !strings.Contains(stdout, "wave 1 cells 1,3,5: job "+jobs[1]) {
		t.Fatalf("submitted %v, want two job arrays and the report job:\n%s", jobs, stdout)
	}
	return jobs
}

// checkFailedCells (TestSweepFailuresOnSlurm): --status lists cells 1 and
// 2 as failed with their job, cause and log, the others pending, and
// exits with an error; cell 1's record names the task it ran as.
func checkFailedCells(t *testing.T, ctx context.Context, out string, jobs []string) {
	t.Helper()
	status, _, err := bicyc(ctx, "sweep", "--out", out, "--status")
	if err == nil || !strings.Contains(err.Error(), "2 of 6 cells failed") {
		t.Errorf("--status with failed cells: error %v", err)
	}
	for _, want := range []string{
		"6 cells: 1 finished, 2 failed, 3 pending",
		"cell 1 finetune-s0: failed: slurm job " + jobs[1] + "_0: data: /usr/share/datasets/fashion-mnist-missing",
		"log: logs/cell-1.log",
		"cell 2 bicyc-s1: failed: slurm job " + jobs[0] + "_2: the bicyc binary could not be run",
		"log: logs/cell-2.log\n",
	} {
		if !strings.Contains(status, want) {
			t.Errorf("--status lacks %q:\n%s", want, status)
		}
	}
	for _, cell := range []string{"cell 3 finetune-s1: pending", "cell 4 bicyc-s2: pending", "cell 5 finetune-s2: pending"} {
		if !strings.Contains(status, cell) {
			t.Errorf("--status lacks %q:\n%s", cell, status)
		}
	}
	var o struct {
		SlurmJob string `json:"slurm_job"`
	}
	if b, err := os.ReadFile(filepath.Join(out, sweep.CellsDir, "finetune-s0.json")); err != nil || json.Unmarshal(b, &o) != nil || o.SlurmJob != jobs[1]+"_0" {
		t.Errorf("cells/finetune-s0.json: slurm job %q, want %s_0 (the task of its source's id) (%v)", o.SlurmJob, jobs[1], err)
	}
}

// cellSpan returns the times cell i's log says its task started and ended.
func cellSpan(out string, i int) (start, end string) {
	b, _ := os.ReadFile(filepath.Join(out, sweep.CellLog(i)))
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 2 && f[0] == "==" && strings.Contains(line, " job "):
			start = f[1]
		case len(f) > 2 && f[0] == "==" && strings.Contains(line, "exit status"):
			end = f[1]
		}
	}
	return start, end
}

// TestClusterDocKubernetes runs the command of docs/cluster.md's
// Kubernetes section word for word, every optional part included, in a
// directory where configs/ is the repository's, and checks that the Jobs
// it writes carry the names, paths and settings the page gives.
func TestClusterDocKubernetes(t *testing.T) {
	md, err := os.ReadFile("../../docs/cluster.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(md)[strings.Index(string(md), "\n## Kubernetes\n"):]
	block := section[strings.Index(section, "```\n")+4:]
	block = block[:strings.Index(block, "```")]
	line := strings.NewReplacer("\\\n", " ", "[", "", "]", "", "...", "").Replace(block)
	args := strings.Fields(line)
	if len(args) < 2 || args[0] != "bicyc" {
		t.Fatalf("docs/cluster.md's Kubernetes command: %q", line)
	}
	dir := t.TempDir()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(repo, "configs"), filepath.Join(dir, "configs")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if _, _, err := bicyc(context.Background(), args[1:]...); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	var job batchv1.Job
	b, err := os.ReadFile("runs/sweeps/e10/k8s/wave-0.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := k8syaml.UnmarshalStrict(b, &job); err != nil {
		t.Fatal(err)
	}
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Image != "registry.example/bicyc:1" || pod.Volumes[0].PersistentVolumeClaim.ClaimName != "bicyc-sweeps" ||
		c.VolumeMounts[0].MountPath != "/sweeps" || !slices.Contains(c.Args, "/sweeps/e10") || !slices.Contains(c.Args, "10m0s") ||
		job.Namespace != "ml" || *job.Spec.Parallelism > 8 || pod.NodeSelector["pool"] != "cpu" ||
		len(pod.Tolerations) != 1 || pod.Tolerations[0].Key != "dedicated" || pod.Tolerations[0].Effect != corev1.TaintEffectNoSchedule ||
		c.Resources.Limits.Cpu().String() != "2" || c.Resources.Limits.Memory().String() != "4Gi" ||
		c.Resources.Limits.Name("nvidia.com/gpu", "").String() != "1" {
		t.Errorf("wave 0 of %q:\n%s", line, b)
	}
	var claim corev1.PersistentVolumeClaim
	if b, err = os.ReadFile("runs/sweeps/e10/k8s/claim.yaml"); err != nil || k8syaml.UnmarshalStrict(b, &claim) != nil ||
		claim.Spec.Resources.Requests.Storage().String() != "50Gi" || *claim.Spec.StorageClassName != "nfs" {
		t.Errorf("claim.yaml (%v):\n%s", err, b)
	}
}
