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
	err := RunCell(context.Background(), p, 1, Options{})
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
	if err := RunCell(context.Background(), p, 0, Options{}); !errors.Is(err, lockfile.ErrHeld) {
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
	s := Slurm{Bicyc: "/opt/bicyc/bin/bicyc", Workdir: "/home/u/bicyc", Partition: "cpu", Time: "1:00:00", CPUsPerTask: 2, Extra: []string{"--qos=short"}}
	if _, err := WriteSlurm(p, Slurm{Bicyc: "bicyc", Workdir: "/w", Time: "1 hour"}); err == nil ||
		!strings.Contains(err.Error(), "absolute") || !strings.Contains(err.Error(), "spaces") {
		t.Errorf("bad settings: %v", err)
	}
	// Cell 0 finished: wave 0 keeps cell 3 only.
	if err := os.MkdirAll(p.Dir(0), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := yaml.Marshal(p.Configs[0])
	for name, text := range map[string][]byte{"config.yaml": b, "metrics.json": []byte(`{"completed_tasks": 5, "tasks": 5}`)} {
		if err := os.WriteFile(filepath.Join(p.Dir(0), name), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	submit, err := WriteSlurm(p, s)
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, SlurmDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	base := filepath.Base(out)
	for i, c := range []struct{ file, want string }{
		{"wave-0.sbatch", "#SBATCH --array=3\n"},
		{"wave-1.sbatch", "#SBATCH --array=1,4\n"},
		{"wave-2.sbatch", "#SBATCH --job-name=bicyc-" + base + "-w2\n#SBATCH --array=2,5\n#SBATCH --output=" + out + "/logs/cell-%a.log\n#SBATCH --open-mode=append\n" +
			"#SBATCH --chdir=/home/u/bicyc\n#SBATCH --cpus-per-task=2\n#SBATCH --partition=cpu\n#SBATCH --time=1:00:00\n#SBATCH --qos=short\n"},
		{"wave-2.sbatch", "exec /opt/bicyc/bin/bicyc sweep --out " + out + " --cell \"$SLURM_ARRAY_TASK_ID\"\n"},
		{"submit.sh", "job0=$(sbatch --parsable wave-0.sbatch)\n"},
		{"submit.sh", "job1=$(sbatch --parsable --dependency=afterok:$job0 --kill-on-invalid-dep=yes wave-1.sbatch)\n"},
		{"submit.sh", "job2=$(sbatch --parsable --dependency=afterok:$job1 --kill-on-invalid-dep=yes wave-2.sbatch)\n"},
	} {
		if text := read(c.file); !strings.Contains(text, c.want) {
			t.Errorf("case %d: %s lacks %q:\n%s", i, c.file, c.want, text)
		}
	}
	if filepath.Base(submit) != "submit.sh" {
		t.Errorf("submit script %s", submit)
	}
	if err := exec.Command("bash", "-n", submit).Run(); err != nil {
		t.Errorf("submit.sh: %v", err)
	}
}

// TestWriteKubernetes decodes the manifests strictly into the Kubernetes
// API's own Go types (k8s.io/api; unknown or mistyped fields are errors)
// and checks what the sweep needs of them.
func TestWriteKubernetes(t *testing.T) {
	out := t.TempDir()
	p := testPlan(t, out)
	k := Kubernetes{Image: "registry.example/bicyc:1", Namespace: "ml", Claim: "sweeps", MountPath: "/sweeps", SweepDir: "/sweeps/s1",
		ClaimSize: "20Gi", StorageClass: "nfs", CPU: "2", Memory: "4Gi", Parallelism: 1, Lease: 3 * time.Minute}
	if _, err := WriteKubernetes(p, Kubernetes{Claim: "Bad_Name", MountPath: "/m", SweepDir: "/elsewhere"}); err == nil ||
		!strings.Contains(err.Error(), "image") || !strings.Contains(err.Error(), "Bad_Name") || !strings.Contains(err.Error(), "not under") {
		t.Errorf("bad settings: %v", err)
	}
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
		s := job.Spec
		if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Namespace != "ml" || *s.CompletionMode != batchv1.IndexedCompletion ||
			int(*s.Completions) != len(cells) || *s.Parallelism != 1 {
			t.Errorf("wave %d: job %s %s/%s: %+v", w, job.APIVersion, job.Kind, job.Name, s)
			continue
		}
		if s.Template.Name != "" || s.Template.Labels["app.kubernetes.io/name"] != "bicyc" {
			t.Errorf("wave %d: pod template metadata %+v", w, s.Template.ObjectMeta)
		}
		pod := s.Template.Spec
		c := pod.Containers[0]
		args := strings.Join(c.Args, " ")
		if want := fmt.Sprintf("sweep --out /sweeps/s1 --wave %d --wave-index $(JOB_COMPLETION_INDEX) --lease 3m0s", w); args != want {
			t.Errorf("wave %d: args %q, want %q", w, args, want)
		}
		if c.Env[0].Name != "JOB_COMPLETION_INDEX" || !strings.Contains(c.Env[0].ValueFrom.FieldRef.FieldPath, "job-completion-index") {
			t.Errorf("wave %d: env %+v", w, c.Env)
		}
		if !c.Resources.Requests.Cpu().Equal(resource.MustParse("2")) || !c.Resources.Limits.Memory().Equal(resource.MustParse("4Gi")) {
			t.Errorf("wave %d: resources %+v", w, c.Resources)
		}
		if pod.RestartPolicy != corev1.RestartPolicyOnFailure || pod.Volumes[0].PersistentVolumeClaim.ClaimName != "sweeps" ||
			c.VolumeMounts[0].MountPath != "/sweeps" || c.VolumeMounts[0].Name != pod.Volumes[0].Name {
			t.Errorf("wave %d: pod %+v", w, pod)
		}
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
	apply, err := os.ReadFile(files[4])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(apply), "kubectl wait -n ml --for=condition=complete --timeout=\"${WAIT_TIMEOUT:-24h}\" job/bicyc-"+k8sName(filepath.Base(out))+"-w1\n") {
		t.Errorf("apply.sh:\n%s", apply)
	}
	// The strict decode does catch a mistyped field.
	var job batchv1.Job
	if err := k8syaml.UnmarshalStrict([]byte("apiVersion: batch/v1\nkind: Job\nspec:\n  completionModes: Indexed\n"), &job); err == nil {
		t.Error("the strict decode accepted an unknown field")
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
	if err := os.WriteFile(script, []byte("echo 'wave 0: job 17'\necho 'sbatch: error: invalid partition' >&2\nexit 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := SubmitSlurm(context.Background(), script)
	if err == nil || !strings.Contains(err.Error(), "invalid partition") || !strings.Contains(err.Error(), "wave 0: job 17") {
		t.Errorf("error %v", err)
	}
	if err := os.WriteFile(script, []byte("echo 'wave 0: job 17'\necho 'wave 1: job 18'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	jobs, err := SubmitSlurm(context.Background(), script)
	if err != nil || jobs[0] != "17" || jobs[1] != "18" {
		t.Errorf("jobs %v, %v", jobs, err)
	}
}
