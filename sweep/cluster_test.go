package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/lockfile"
)

// testPlan is the plan of a 2-seed sweep of bicyc and adagauss with a
// classifier variant of adagauss in out, over default configurations:
// waves [[0 3] [1 4] [2 5]].
func testPlan(t *testing.T, out string) *Plan {
	t.Helper()
	spec := Spec{Config: "c.yaml", Out: out, Seeds: 2, Methods: []config.Method{config.MethodBicyc, config.MethodAdaGauss},
		Variants: []NamedVariant{{Name: "cal", Method: config.MethodAdaGauss, Sets: []string{"classifier.shrink=0.5"}}}}
	var configs []config.Config
	for _, r := range spec.Plan() {
		c := config.Default()
		c.Method, c.Seed, c.RunDir, c.RunName = r.Variant.Method, r.Seed, out, r.Name
		c.Export.Enabled = false
		if r.Variant.Name == "cal" {
			c.Classifier.Shrink = 0.5
		}
		configs = append(configs, c)
	}
	return planOf(spec, configs)
}

// TestPlanWriteRead: a frozen plan reads back with the same cells and
// configurations from another path to the same directory.
func TestPlanWriteRead(t *testing.T) {
	out := t.TempDir()
	p := testPlan(t, out)
	if err := p.Write(); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "mounted")
	if err := os.Symlink(out, link); err != nil {
		t.Fatal(err)
	}
	q, err := ReadPlan(link)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Cells {
		if !reflect.DeepEqual(p.Cells[i], q.Cells[i]) {
			t.Errorf("case %d: cell %+v read back as %+v", i, p.Cells[i], q.Cells[i])
		}
		if d := config.ExperimentDiff(p.Configs[i], q.Configs[i]); len(d) > 0 || q.Configs[i].RunDir != link {
			t.Errorf("case %d: configuration read back differs: %v, run_dir %s", i, d, q.Configs[i].RunDir)
		}
	}
	rec, err := ReadStatus(out)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Runs[2].WaitsFor != "adagauss-s0" || !rec.Runs[2].Rescore || rec.Runs[1].Rescore || rec.Runs[0].WaitsFor != "" {
		t.Errorf("sweep.json does not record the waits: %+v", rec.Runs[:3])
	}
	if _, err := ReadPlan(t.TempDir()); err == nil {
		t.Error("a directory without a plan was read")
	}
}

// TestRunCellStates: a cell waiting for an unfinished one is refused, and
// ReadStatus tells pending, stopped, failed and running cells apart from
// the directory alone.
func TestRunCellStates(t *testing.T) {
	out := t.TempDir()
	p := testPlan(t, out)
	if err := p.Write(); err != nil {
		t.Fatal(err)
	}
	err := RunCell(context.Background(), p, 1, Options{Train: trainRun})
	if !errors.Is(err, ErrWaiting) || !strings.Contains(err.Error(), "cell 0 bicyc-s0, which is pending") {
		t.Fatalf("cell 1 before cell 0: %v", err)
	}
	// Cell 3 was started (config.yaml) and left; cell 4 failed; cell 0 is held.
	if err := os.MkdirAll(p.Dir(3), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := yaml.Marshal(p.Configs[3])
	if err := os.WriteFile(filepath.Join(p.Dir(3), "config.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeOutcome(out, "adagauss-s1", cellOutcome{Status: StatusFailed, Error: "NaN in training", WallSeconds: 3}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(out, LogsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, CellLog(4)), []byte("log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, _, _, err := lockfile.Acquire(context.Background(), cellFile(out, "bicyc-s0", ".lock"), lockfile.Options{Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := RunCell(context.Background(), p, 0, Options{Train: trainRun}); !errors.Is(err, lockfile.ErrHeld) {
		t.Errorf("a held cell ran: %v", err)
	}
	rec, err := ReadStatus(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{StatusRunning, StatusPending, StatusPending, StatusStopped, StatusFailed, StatusPending}
	for i, r := range rec.Runs {
		if r.Status != want[i] {
			t.Errorf("case %d (%s): %s, want %s", i, r.Name, r.Status, want[i])
		}
	}
	if rec.Runs[4].Error != "NaN in training" || rec.Runs[4].Log != CellLog(4) || rec.Runs[4].WallSeconds != 3 {
		t.Errorf("failed cell: %+v", rec.Runs[4])
	}
	text := FormatStatus(out, rec)
	for _, s := range []string{"6 cells: 1 running, 1 failed, 1 stopped, 3 pending", "cell 4 adagauss-s1: failed: NaN in training\n    log: logs/cell-4.log",
		"cell 1 adagauss-s0: pending (waits for bicyc-s0)", "cell 0 bicyc-s0: running (pid "} {
		if !strings.Contains(text, s) {
			t.Errorf("status lacks %q:\n%s", s, text)
		}
	}
}

// TestWriteSlurm checks the sbatch scripts of a plan: one array per wave
// whose indices are the cells, chained by afterok; finished cells left out.
func TestWriteSlurm(t *testing.T) {
	out := t.TempDir()
	p := testPlan(t, out)
	bin := filepath.Join(t.TempDir(), "bicyc")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := Slurm{Bicyc: bin, Workdir: "/home/u/bicyc", Partition: "cpu", Time: "1:00:00", CPUsPerTask: 2, Extra: []string{"--qos=short"},
		MaxParallel: 2, Lease: 3 * time.Minute}
	markFinished(t, p, 0)
	submit, skipped, err := WriteSlurm(p, s)
	if err != nil || len(skipped) > 0 {
		t.Fatal(err, skipped)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, SlurmDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for i, c := range slurmWants(out, bin) {
		if text := read(c.file); !strings.Contains(text, c.want) {
			t.Errorf("case %d: %s lacks %q:\n%s", i, c.file, c.want, text)
		}
	}
	if filepath.Base(submit) != "submit.sh" {
		t.Errorf("submit script %s", submit)
	}
	for _, f := range []string{"submit.sh", "array-2.sbatch", "report.sbatch"} {
		if err := exec.Command("bash", "-n", filepath.Join(out, SlurmDir, f)).Run(); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestSlurmRefusesBadSettings: a relative binary and a time with spaces are
// refused; options the scripts set are refused by name, also abbreviated as
// sbatch accepts them, and a binary that is not there is refused.
func TestSlurmRefusesBadSettings(t *testing.T) {
	p := testPlan(t, t.TempDir())
	if _, _, err := WriteSlurm(p, Slurm{Bicyc: "bicyc", Workdir: "/w", Time: "1 hour"}); err == nil ||
		!strings.Contains(err.Error(), "absolute") || !strings.Contains(err.Error(), "spaces") {
		t.Errorf("bad settings: %v", err)
	}
	bad := Slurm{Bicyc: "/nonexistent/bicyc", Workdir: "/w",
		Extra: []string{"--array=0-3%2", "--output=x.log", "--dep=afterok:1", "--chdir=/tmp", "--qos=long"}}
	err := bad.Validate()
	for i, want := range []string{"--array=0-3%2 sets --array", "--output=x.log sets --output", "--dep=afterok:1 sets --dependency",
		"--chdir=/tmp sets --chdir", "/nonexistent/bicyc: no such file"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("case %d: %v lacks %q", i, err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "qos") {
		t.Errorf("--qos refused: %v", err)
	}
}

// markFinished writes cell's config.yaml and a metrics.json of a finished run.
func markFinished(t *testing.T, p *Plan, cell int) {
	t.Helper()
	if err := os.MkdirAll(p.Dir(cell), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := yaml.Marshal(p.Configs[cell])
	for name, text := range map[string][]byte{"config.yaml": b, "metrics.json": []byte(`{"completed_tasks": 5, "tasks": 5}`)} {
		if err := os.WriteFile(filepath.Join(p.Dir(cell), name), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// slurmWants are lines TestWriteSlurm's scripts must hold (file, text),
// with cell 0 finished, for the sweep in out run with binary bin.
func slurmWants(out, bin string) []struct{ file, want string } {
	base := filepath.Base(out)
	return []struct{ file, want string }{
		// Cell 0 finished: cell 3 alone in wave 0, cell 1 (from cell 0) free.
		{"array-0.sbatch", "#SBATCH --array=3%2\n"},
		{"array-0.sbatch", "\n3) cell=3 ;;\n*)"},
		{"array-1.sbatch", "#SBATCH --job-name=bicyc-" + base + "-w1\n#SBATCH --array=1%2\n#SBATCH --output=" + out + "/logs/slurm-%A_%a.log\n#SBATCH --open-mode=append\n" +
			"#SBATCH --cpus-per-task=2\n#SBATCH --chdir=/home/u/bicyc\n#SBATCH --partition=cpu\n#SBATCH --time=1:00:00\n#SBATCH --qos=short\n"},
		// Cell 4 starts from cell 3: the task of cell 3's id, after it.
		{"array-2.sbatch", "#SBATCH --array=3%2\n"},
		{"array-2.sbatch", "\n3) cell=4 ;;\n*)"},
		{"array-2.sbatch", "exec >> " + out + "/logs/cell-\"$cell\".log 2>&1\n"},
		{"array-2.sbatch", bin + " sweep --out " + out + " --cell \"$cell\" --wait-held --lease 3m0s || rc=$?\n"},
		{"array-2.sbatch", "> " + out + "/slurm/cell-$cell.exit.tmp && mv "},
		{"array-3.sbatch", "\n1) cell=2 ;;\n*)"},
		{"array-4.sbatch", "\n3) cell=5 ;;\n*)"},
		{"report.sbatch", "#SBATCH --output=" + out + "/logs/report.log\n"},
		{"report.sbatch", "exec " + bin + " report " + out + "\n"},
		{"submit.sh", "job0=$(sbatch --parsable array-0.sbatch)\n"},
		{"submit.sh", "echo \"wave 0 cells 3: job $job0\"\n"},
		{"submit.sh", "job1=$(sbatch --parsable array-1.sbatch)\n"},
		{"submit.sh", "job2=$(sbatch --parsable --dependency=aftercorr:$job0 --kill-on-invalid-dep=yes array-2.sbatch)\n"},
		{"submit.sh", "job3=$(sbatch --parsable --dependency=aftercorr:$job1 --kill-on-invalid-dep=yes array-3.sbatch)\n"},
		{"submit.sh", "job4=$(sbatch --parsable --dependency=aftercorr:$job2 --kill-on-invalid-dep=yes array-4.sbatch)\n"},
		{"submit.sh", "report=$(sbatch --parsable --dependency=afterany:$job0:$job1:$job2:$job3:$job4 report.sbatch)\n"},
	}
}

// TestSlurmArraysRounds: two cells that start from the same one go into
// two arrays after its array, each with the source's task id; a cell whose
// source runs elsewhere now is left out with it.
func TestSlurmArraysRounds(t *testing.T) {
	out := t.TempDir()
	spec := Spec{Config: "c.yaml", Out: out, Seeds: 1, Methods: []config.Method{config.MethodBicyc, config.MethodAdaGauss, config.MethodFinetune}}
	var configs []config.Config
	for _, r := range spec.Plan() {
		c := config.Default()
		c.Method, c.Seed, c.RunDir, c.RunName = r.Variant.Method, r.Seed, out, r.Name
		configs = append(configs, c)
	}
	p := planOf(spec, configs)
	if p.Cells[1].WaitsFor != 0 || p.Cells[2].WaitsFor != 0 {
		t.Fatalf("cells 1 and 2 wait for %d and %d, want 0", p.Cells[1].WaitsFor, p.Cells[2].WaitsFor)
	}
	arrays, skipped, err := slurmArrays(p)
	if err != nil || len(skipped) > 0 {
		t.Fatal(err, skipped)
	}
	want := []slurmArray{{wave: 0, cells: []int{0}, tasks: []int{0}, after: -1},
		{wave: 1, cells: []int{1}, tasks: []int{0}, after: 0}, {wave: 1, cells: []int{2}, tasks: []int{0}, after: 0}}
	if !reflect.DeepEqual(arrays, want) {
		t.Errorf("arrays %+v, want %+v", arrays, want)
	}
	// Cell 0 held by a live worker (this process): it and its two
	// dependents are left out.
	if err := os.MkdirAll(filepath.Join(out, CellsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	lock, _, _, err := lockfile.Acquire(context.Background(), cellFile(out, p.Cells[0].Run.Name, ".lock"), lockfile.Options{Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	arrays, skipped, err = slurmArrays(p)
	if err != nil || len(arrays) != 0 || len(skipped) != 3 || !strings.Contains(skipped[0], "running") ||
		!strings.Contains(skipped[1], "starts from cell 0 bicyc-s0, which is running and not submitted") {
		t.Errorf("with cell 0 running: arrays %+v, left out %q (%v)", arrays, skipped, err)
	}
}

// TestSlurmRequeueScript runs a task's script with --requeue under bash,
// as slurmd would, with a worker that stops on SIGTERM and an scontrol
// that records its arguments: Slurm's USR1 near the time limit stops the
// worker, the task requeues itself by its job id, and its exit record
// and the cell's log say so. Without --requeue the script has neither.
func TestSlurmRequeueScript(t *testing.T) {
	out := t.TempDir()
	p := testPlan(t, out)
	bin := t.TempDir()
	worker := filepath.Join(bin, "bicyc")
	// The worker announces itself, then stops when asked (exit 1, as bicyc
	// does when cancelled), recording its arguments.
	if err := os.WriteFile(worker, []byte("#!/bin/bash\necho \"$*\" > "+bin+"/args\ntrap 'echo stopped; exit 1' TERM\ntouch "+bin+"/started\nwhile :; do sleep 0.1; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "scontrol"), []byte("#!/bin/sh\necho \"$*\" > "+bin+"/scontrol.args\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := WriteSlurm(p, Slurm{Bicyc: worker, Workdir: "/w", Requeue: true}); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(out, SlurmDir, "array-0.sbatch")
	text, _ := os.ReadFile(script)
	if !strings.Contains(string(text), "#SBATCH --requeue\n#SBATCH --signal=B:USR1@120\n") {
		t.Fatalf("%s:\n%s", script, text)
	}
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "SLURM_ARRAY_JOB_ID=70", "SLURM_ARRAY_TASK_ID=3", "SLURM_JOB_ID=73")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); !fileExists(filepath.Join(bin, "started")); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the worker did not start")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("task exit: %v, want the worker's status 1", err)
	}
	args, _ := os.ReadFile(filepath.Join(bin, "args"))
	requeued, _ := os.ReadFile(filepath.Join(bin, "scontrol.args"))
	log, _ := os.ReadFile(filepath.Join(out, CellLog(3)))
	if string(args) != "sweep --out "+out+" --cell 3 --wait-held\n" || string(requeued) != "requeue 73\n" ||
		!strings.Contains(string(log), "stopped\n") || !strings.Contains(string(log), "time limit near: requeued") {
		t.Errorf("worker args %q, scontrol %q, log:\n%s", args, requeued, log)
	}
	if e, ok, err := readTaskExit(out, 3); err != nil || !ok || e.ExitCode != 1 || e.Job != "70_3" || e.JobID != "73" {
		t.Errorf("exit record %+v %v %v", e, ok, err)
	}
	if _, _, err := WriteSlurm(p, Slurm{Bicyc: worker, Workdir: "/w"}); err != nil {
		t.Fatal(err)
	}
	if text, _ := os.ReadFile(script); strings.Contains(string(text), "requeue") || strings.Contains(string(text), "USR1") {
		t.Errorf("without Requeue:\n%s", text)
	}
}

// TestRunCellWaitHeld: with WaitHeld, a worker whose cell another holds
// waits until the lock is free, then goes on (here: finds the cell
// finished); without it, it refuses at once.
func TestRunCellWaitHeld(t *testing.T) {
	out := t.TempDir()
	p := testPlan(t, out)
	if err := p.Write(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(p.Dir(0), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := yaml.Marshal(p.Configs[0])
	for name, text := range map[string][]byte{"config.yaml": b, "metrics.json": []byte(`{"completed_tasks": 5, "tasks": 5}`)} {
		if err := os.WriteFile(filepath.Join(p.Dir(0), name), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lock, _, _, err := lockfile.Acquire(context.Background(), cellFile(out, p.Cells[0].Run.Name, ".lock"), lockfile.Options{Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := RunCell(context.Background(), p, 0, Options{Train: trainRun}); !errors.Is(err, lockfile.ErrHeld) {
		t.Fatalf("without WaitHeld: %v, want lockfile.ErrHeld", err)
	}
	var status strings.Builder
	done := make(chan error, 1)
	// An 8 s lease: the waiting worker tries the lock every second.
	go func() {
		done <- RunCell(context.Background(), p, 0, Options{Train: trainRun, WaitHeld: true, Lease: 8 * time.Second, Status: &status})
	}()
	select {
	case err := <-done:
		t.Fatalf("returned while the cell was held: %v", err)
	case <-time.After(1500 * time.Millisecond):
	}
	lock.Release()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(status.String(), "waiting until it is free") {
			t.Errorf("after the release: %v\n%s", err, status.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("still waiting 20 s after the lock was released")
	}
}

// TestStatusFromTaskExit: a cell bicyc never recorded is failed when its
// task's exit record says so, with the reason; a finished task's record
// changes nothing; submitting again removes the record.
func TestStatusFromTaskExit(t *testing.T) {
	out := t.TempDir()
	p := testPlan(t, out)
	if err := p.Write(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(out, SlurmDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, rc := range map[int]int{0: 127, 1: ExitWaiting, 2: 0} {
		rec := fmt.Sprintf(`{"job":"41_%d","job_id":"%d","exit_code":%d,"host":"node1","time":"2026-11-28T05:00:00Z"}`, i, 50+i, rc)
		if err := os.WriteFile(taskExitFile(out, i), []byte(rec+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := ReadStatus(out)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct{ status, reason string }{
		{StatusFailed, "slurm job 41_0: the bicyc binary could not be run on node1 (exit status 127"},
		{StatusFailed, "slurm job 41_1: refused: the cell it starts from had not finished"},
		{StatusPending, ""},
	} {
		if r := rec.Runs[i]; r.Status != c.status || !strings.Contains(r.Error, c.reason) {
			t.Errorf("cell %d: %s %q, want %s %q", i, r.Status, r.Error, c.status, c.reason)
		}
	}
	if n := rec.Count(StatusFailed); n != 2 {
		t.Errorf("%d failed, want 2", n)
	}
	bin := filepath.Join(t.TempDir(), "bicyc")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := WriteSlurm(p, Slurm{Bicyc: bin, Workdir: "/w"}); err != nil {
		t.Fatal(err)
	}
	if fileExists(taskExitFile(out, 0)) {
		t.Error("submitting again kept the exit record of cell 0")
	}
}

// TestWriteKubernetes decodes the manifests strictly into the Kubernetes
// API's own Go types (k8s.io/api; unknown or mistyped fields are errors)
// and checks what the sweep needs of them.
func TestWriteKubernetes(t *testing.T) {
	out := t.TempDir()
	p := testPlan(t, out)
	k := Kubernetes{Image: "registry.example/bicyc:1", Namespace: "ml", Claim: "sweeps", MountPath: "/sweeps", SweepDir: "/sweeps/s1",
		ClaimSize: "20Gi", StorageClass: "nfs", CPU: "2", Memory: "4Gi", Parallelism: 1, Lease: 3 * time.Minute,
		NodeSelector: map[string]string{"pool": "cpu"}, Tolerations: []string{"dedicated=ml:NoSchedule", "spot:NoExecute"}, GPUs: 1}
	files, err := WriteKubernetes(p, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 5 {
		t.Fatalf("files %v, want the claim, 3 waves and apply.sh", files)
	}
	var claim corev1.PersistentVolumeClaim
	decodeStrict(t, files[0], &claim)
	if claim.Kind != "PersistentVolumeClaim" || claim.Name != "sweeps" || claim.Spec.AccessModes[0] != corev1.ReadWriteMany ||
		!claim.Spec.Resources.Requests.Storage().Equal(resource.MustParse("20Gi")) || *claim.Spec.StorageClassName != "nfs" {
		t.Errorf("claim %+v", claim)
	}
	for w, cells := range p.Waves() {
		var job batchv1.Job
		decodeStrict(t, files[1+w], &job)
		checkWaveJob(t, w, len(cells), job)
		// Completion index i of wave w is the wave's i-th cell.
		for i, cell := range cells {
			if got, err := p.WaveCell(w, i); err != nil || got != cell {
				t.Errorf("wave %d index %d: cell %d (%v), want %d", w, i, got, err, cell)
			}
		}
	}
	if _, err := p.WaveCell(0, 2); err == nil {
		t.Error("wave 0 has 2 cells, index 2 was accepted")
	}
	checkApply(t, files[4], "bicyc-"+k8sName(filepath.Base(out)))
	// The strict decode does catch a mistyped field.
	var job batchv1.Job
	if err := k8syaml.UnmarshalStrict([]byte("apiVersion: batch/v1\nkind: Job\nspec:\n  completionModes: Indexed\n"), &job); err == nil {
		t.Error("the strict decode accepted an unknown field")
	}
}

// TestKubernetesRefusesBadSettings: a missing image, a claim name
// Kubernetes refuses, a sweep directory outside the mount and a toleration
// without its effect are each named.
func TestKubernetesRefusesBadSettings(t *testing.T) {
	p := testPlan(t, t.TempDir())
	if _, err := WriteKubernetes(p, Kubernetes{Claim: "Bad_Name", MountPath: "/m", SweepDir: "/elsewhere", Tolerations: []string{"dedicated=ml"}}); err == nil ||
		!strings.Contains(err.Error(), "image") || !strings.Contains(err.Error(), "Bad_Name") || !strings.Contains(err.Error(), "not under") ||
		!strings.Contains(err.Error(), `toleration "dedicated=ml": want key[=value]:effect`) {
		t.Errorf("bad settings: %v", err)
	}
}

// checkWaveJob checks wave w's Indexed Job of cells completions against
// TestWriteKubernetes's settings.
func checkWaveJob(t *testing.T, w, cells int, job batchv1.Job) {
	t.Helper()
	s := job.Spec
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Namespace != "ml" || *s.CompletionMode != batchv1.IndexedCompletion ||
		int(*s.Completions) != cells || *s.Parallelism != 1 {
		t.Errorf("wave %d: job %s %s/%s: %+v", w, job.APIVersion, job.Kind, job.Name, s)
		return
	}
	if s.Template.Name != "" || s.Template.Labels["app.kubernetes.io/name"] != "bicyc" {
		t.Errorf("wave %d: pod template metadata %+v", w, s.Template.ObjectMeta)
	}
	pod := s.Template.Spec
	checkWaveContainer(t, w, pod.Containers[0])
	want := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ml", Effect: corev1.TaintEffectNoSchedule},
		{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
	if !reflect.DeepEqual(pod.Tolerations, want) || pod.NodeSelector["pool"] != "cpu" || s.TTLSecondsAfterFinished == nil ||
		*s.TTLSecondsAfterFinished != int32(JobTTL.Seconds()) {
		t.Errorf("wave %d: tolerations %+v, node selector %v, ttl %v", w, pod.Tolerations, pod.NodeSelector, s.TTLSecondsAfterFinished)
	}
	if pod.RestartPolicy != corev1.RestartPolicyOnFailure || pod.Volumes[0].PersistentVolumeClaim.ClaimName != "sweeps" ||
		pod.Containers[0].VolumeMounts[0].MountPath != "/sweeps" || pod.Containers[0].VolumeMounts[0].Name != pod.Volumes[0].Name {
		t.Errorf("wave %d: pod %+v", w, pod)
	}
}

// checkWaveContainer checks a wave's container: its command line, the
// completion index and threads in its environment, its resources.
func checkWaveContainer(t *testing.T, w int, c corev1.Container) {
	t.Helper()
	args := strings.Join(c.Args, " ")
	if want := fmt.Sprintf("sweep --out /sweeps/s1 --wave %d --wave-index $(JOB_COMPLETION_INDEX) --lease 3m0s --wait-held", w); args != want {
		t.Errorf("wave %d: args %q, want %q", w, args, want)
	}
	if c.Env[0].Name != "JOB_COMPLETION_INDEX" || !strings.Contains(c.Env[0].ValueFrom.FieldRef.FieldPath, "job-completion-index") {
		t.Errorf("wave %d: env %+v", w, c.Env)
	}
	if !c.Resources.Requests.Cpu().Equal(resource.MustParse("2")) || !c.Resources.Limits.Cpu().Equal(resource.MustParse("2")) ||
		!c.Resources.Limits.Memory().Equal(resource.MustParse("4Gi")) || c.Resources.Limits.Name("nvidia.com/gpu", resource.DecimalSI).Value() != 1 {
		t.Errorf("wave %d: resources %+v", w, c.Resources)
	}
	// The threads follow the CPU limit.
	threads := map[string]bool{}
	for _, e := range c.Env[1:] {
		if e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.cpu" {
			threads[e.Name] = true
		}
	}
	if !threads["GOMAXPROCS"] || !threads["OPENBLAS_NUM_THREADS"] {
		t.Errorf("wave %d: env %+v: want GOMAXPROCS and OPENBLAS_NUM_THREADS from limits.cpu", w, c.Env)
	}
}

// checkApply runs apply.sh with a kubectl that records its arguments and
// answers the Jobs' conditions as `kubectl get -o jsonpath` prints them:
// wave 0 completes, wave 1 fails, so apply.sh stops there, exit status 1,
// saying which; a Job with no condition yet times out after WAIT_SECONDS.
func checkApply(t *testing.T, apply, base string) {
	t.Helper()
	bin := t.TempDir()
	log := filepath.Join(bin, "kubectl.log")
	kubectl := `#!/bin/bash
echo "$*" >> "` + log + `"
case "$*" in
"get "*-w0" "*) printf 'SuccessCriteriaMet Complete' ;;
"get "*-w1" "*) printf '%s' "${W1_CONDITIONS-FailureTarget Failed}" ;;
esac
`
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(kubectl), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(env ...string) (string, string, error) {
		os.Remove(log)
		cmd := exec.Command("bash", apply)
		cmd.Env = append(os.Environ(), append([]string{"PATH=" + bin + ":" + os.Getenv("PATH"), "POLL_SECONDS=0", "WAIT_SECONDS=20"}, env...)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		calls, _ := os.ReadFile(log)
		return stdout.String() + stderr.String(), string(calls), err
	}
	output, calls, err := run()
	if err == nil || !strings.Contains(output, "job "+base+"-w0: complete") || !strings.Contains(output, "job "+base+"-w1: failed (kubectl describe -n ml job/"+base+"-w1") {
		t.Errorf("apply.sh with wave 1 failing: %v\n%s", err, output)
	}
	if !strings.Contains(calls, "apply -f wave-1.yaml") || strings.Contains(calls, "wave-2.yaml") || !strings.Contains(calls, "get -n ml job/"+base+"-w1 -o") {
		t.Errorf("kubectl calls:\n%s", calls)
	}
	output, _, err = run("W1_CONDITIONS=", "WAIT_SECONDS=0")
	if err == nil || !strings.Contains(output, "job "+base+"-w1: neither complete nor failed after 0 s") {
		t.Errorf("apply.sh with wave 1 never ending: %v\n%s", err, output)
	}
}

// decodeStrict decodes the YAML file path into v, failing on any field
// v's type does not have.
func decodeStrict(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := k8syaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
}

// TestSubmitSlurmFailure: a submission that fails half-way names the
// waves already queued.
func TestSubmitSlurmFailure(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "submit.sh")
	if err := os.WriteFile(script, []byte("echo 'wave 0 cells 0,3: job 17'\necho 'sbatch: error: invalid partition' >&2\nexit 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := SubmitSlurm(context.Background(), script)
	if err == nil || !strings.Contains(err.Error(), "invalid partition") || !strings.Contains(err.Error(), "wave 0 cells 0,3: job 17") {
		t.Errorf("error %v", err)
	}
	if err := os.WriteFile(script, []byte("echo 'wave 0 cells 0,3: job 17'\necho 'wave 1 cells 1: job 18'\necho 'report: job 19'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	jobs, report, err := SubmitSlurm(context.Background(), script)
	if err != nil || len(jobs) != 2 || jobs[0] != (SubmittedArray{0, "0,3", "17"}) || jobs[1].Job != "18" || report != "19" {
		t.Errorf("jobs %v, report %q, %v", jobs, report, err)
	}
}
