package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bicyc/bicyc/durable"
)

// SlurmDir is the directory of a sweep that holds its sbatch scripts.
const SlurmDir = "slurm"

// Slurm are the settings of the sbatch scripts a sweep writes (WriteSlurm).
type Slurm struct {
	// Bicyc is the bicyc binary as the compute nodes see it, Workdir the
	// directory the workers run in (relative paths of the configurations,
	// such as data directories, are resolved there). Both absolute.
	Bicyc, Workdir string
	// Partition, Time (sbatch --time, e.g. 2:00:00), Mem (--mem, e.g. 8G),
	// Account: "" leaves them to the cluster's defaults.
	Partition, Time, Mem, Account string
	// CPUsPerTask is --cpus-per-task; 0 leaves it to the cluster.
	CPUsPerTask int
	// Extra are further sbatch options, one per #SBATCH line
	// ("--qos=short", "--gres=gpu:1"); the options the scripts set
	// themselves (reservedSbatch) are refused.
	Extra []string
	// MaxParallel caps the tasks of each job array that run at once
	// (sbatch --array=...%N); 0: no cap.
	MaxParallel int
	// Lease is every worker's --lease; 0: the workers' default.
	Lease time.Duration
	// Requeue lets a task that reaches its time limit go back to the
	// queue and resume its cell after the last completed task: Slurm
	// signals the task RequeueGrace before the limit, the worker stops,
	// and the task requeues itself (sbatch --requeue, --signal).
	Requeue bool
}

// RequeueGrace is how long before its time limit a task with Requeue is
// told to stop: a worker stops at once (its cell resumes after its last
// completed task), so this covers recording it on a slow filesystem.
const RequeueGrace = 2 * time.Minute

// reservedSbatch are the sbatch options the scripts set, which an Extra
// option must not set again, with what to use instead.
var reservedSbatch = map[string]string{
	"array":               "the arrays are the sweep's cells; to cap the tasks at once use --max-parallel",
	"output":              "each cell's output goes to <out>/logs/cell-<index>.log",
	"error":               "each cell's output goes to <out>/logs/cell-<index>.log",
	"open-mode":           "a resumed cell appends to its log",
	"dependency":          "each cell's task depends on its source's task (aftercorr), and the report job on all",
	"kill-on-invalid-dep": "set with the dependencies",
	"chdir":               "the workers run where bicyc sweep --submit ran",
	"job-name":            "the jobs are named bicyc-<sweep>-w<wave>",
	"parsable":            "submit.sh reads the job ids",
}

// Validate reports every problem of s at once.
func (s Slurm) Validate() error {
	var errs []error
	if !filepath.IsAbs(s.Bicyc) {
		errs = append(errs, fmt.Errorf("slurm: the bicyc binary %q is not an absolute path", s.Bicyc))
	}
	if !filepath.IsAbs(s.Workdir) {
		errs = append(errs, fmt.Errorf("slurm: the working directory %q is not an absolute path", s.Workdir))
	}
	if s.CPUsPerTask < 0 {
		errs = append(errs, fmt.Errorf("slurm: --cpus-per-task %d is negative", s.CPUsPerTask))
	}
	for _, v := range []string{s.Partition, s.Time, s.Mem, s.Account} {
		if strings.ContainsAny(v, " \n\t'\"$`") {
			errs = append(errs, fmt.Errorf("slurm: %q: sbatch values cannot hold spaces, quotes or $", v))
		}
	}
	if s.MaxParallel < 0 {
		errs = append(errs, fmt.Errorf("slurm: --max-parallel %d is negative", s.MaxParallel))
	}
	if s.Lease < 0 {
		errs = append(errs, fmt.Errorf("slurm: --lease %s is negative", s.Lease))
	}
	for _, e := range s.Extra {
		if !strings.HasPrefix(e, "--") || strings.ContainsAny(e, "\n") {
			errs = append(errs, fmt.Errorf("slurm: extra sbatch option %q: want one --option[=value]", e))
			continue
		}
		// sbatch takes any unambiguous prefix of a long option.
		name, _, _ := strings.Cut(strings.TrimPrefix(e, "--"), "=")
		for _, r := range slices.Sorted(maps.Keys(reservedSbatch)) {
			if name != "" && strings.HasPrefix(r, name) {
				errs = append(errs, fmt.Errorf("slurm: --sbatch-arg=%s sets --%s, which bicyc sweep sets itself: %s", e, r, reservedSbatch[r]))
				break
			}
		}
	}
	if filepath.IsAbs(s.Bicyc) {
		// The nodes see the binary under the same path (docs/cluster.md).
		if fi, err := os.Stat(s.Bicyc); err != nil {
			errs = append(errs, fmt.Errorf("slurm: the bicyc binary: %w", err))
		} else if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			errs = append(errs, fmt.Errorf("slurm: the bicyc binary %s is not an executable file", s.Bicyc))
		}
	}
	return errors.Join(errs...)
}

// WriteSlurm writes the sbatch scripts of the plan's unfinished cells into
// <out>/slurm, after freezing the plan (Plan.Write), and returns the path
// of submit.sh, which submits them, and the cells it left out, each with
// the reason:
//
//	array-<n>.sbatch  a job array of cells of one wave. Its task ids are
//	                  those of the tasks the cells start from, in the array
//	                  that runs those (aftercorr: each task starts when its
//	                  own source has succeeded, so one failed or cancelled
//	                  task stops only the cells that start from it), or the
//	                  cell indices where the cells wait for nothing
//	                  unfinished; each task runs its cell with bicyc sweep
//	                  --cell and appends its output to
//	                  <out>/logs/cell-<index>.log
//	report.sbatch     bicyc report <out>, once every array has ended
//	                  however it ended (afterany), into <out>/logs/report.log
//	submit.sh         sbatch of every array in order, printing
//	                  "wave <k> cells <i,j>: job <id>", then of the report
//	                  job ("report: job <id>")
//
// Finished cells are left out, so a sweep is resubmitted after a failure
// with the same command; so are cells a live worker runs now, and the
// cells that start from a left-out unfinished one. Each task writes its
// exit record (<out>/slurm/cell-<i>.exit) when the command it ran exits,
// which ReadStatus reads for cells bicyc never recorded; the records of
// the cells submitted again are removed. The sweep directory must be an
// absolute path.
func WriteSlurm(plan *Plan, s Slurm) (string, []string, error) {
	out := plan.Spec.Out
	if !filepath.IsAbs(out) {
		return "", nil, fmt.Errorf("slurm: the sweep directory %q must be absolute: the jobs run elsewhere", out)
	}
	if err := s.Validate(); err != nil {
		return "", nil, err
	}
	if err := plan.Write(); err != nil {
		return "", nil, err
	}
	for _, d := range []string{SlurmDir, LogsDir} {
		if err := os.MkdirAll(filepath.Join(out, d), 0o755); err != nil {
			return "", nil, err
		}
	}
	arrays, skipped, err := slurmArrays(plan)
	if err != nil {
		return "", nil, err
	}
	var submit strings.Builder
	submit.WriteString("#!/bin/bash\n# Submits the sweep's job arrays in order (written by bicyc sweep --submit slurm).\nset -euo pipefail\ncd \"$(dirname \"$0\")\"\n")
	var jobs []string
	for n, a := range arrays {
		for _, c := range a.cells {
			if err := os.Remove(taskExitFile(out, c)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", nil, err
			}
		}
		name := fmt.Sprintf("array-%d.sbatch", n)
		if err := durable.WriteFile(filepath.Join(out, SlurmDir, name), []byte(s.script(plan, a))); err != nil {
			return "", nil, err
		}
		dep := ""
		if a.after >= 0 {
			dep = fmt.Sprintf(" --dependency=aftercorr:$job%d --kill-on-invalid-dep=yes", a.after)
		}
		fmt.Fprintf(&submit, "job%d=$(sbatch --parsable%s %s)\njob%d=${job%d%%%%;*}\necho \"wave %d cells %s: job $job%d\"\n",
			n, dep, name, n, n, a.wave, joinInts(a.cells), n)
		jobs = append(jobs, fmt.Sprintf("$job%d", n))
	}
	if len(jobs) > 0 {
		if err := durable.WriteFile(filepath.Join(out, SlurmDir, "report.sbatch"), []byte(s.reportScript(plan))); err != nil {
			return "", nil, err
		}
		fmt.Fprintf(&submit, "report=$(sbatch --parsable --dependency=afterany:%s report.sbatch)\nreport=${report%%%%;*}\necho \"report: job $report\"\n", strings.Join(jobs, ":"))
	}
	path := filepath.Join(out, SlurmDir, "submit.sh")
	return path, skipped, durable.WriteFile(path, []byte(submit.String()))
}

// slurmArray is one job array: cells of one wave, and the task id of each
// (tasks[i] runs cells[i]); after is the index of the array whose tasks of
// the same ids they wait for (aftercorr), -1 for none.
type slurmArray struct {
	wave         int
	cells, tasks []int
	after        int
}

// slurmArrays groups the plan's unfinished cells into job arrays, in
// submission order, and lists the cells left out with the reason.
func slurmArrays(plan *Plan) ([]slurmArray, []string, error) {
	type place struct{ array, task int }
	placed := map[int]place{}
	var arrays []slurmArray
	var skipped []string
	for k, wave := range plan.Waves() {
		free := slurmArray{wave: k, after: -1}
		// rounds[a] are the arrays of this wave after array a, each with
		// distinct task ids.
		rounds := map[int][]int{}
		var dependent []slurmArray
		for _, i := range wave {
			c := plan.Cells[i]
			r := RunRecord{Name: c.Run.Name}
			if err := overlayState(plan.Spec.Out, i, &r); err != nil {
				return nil, nil, err
			}
			switch r.Status {
			case StatusFinished:
				continue
			case StatusRunning:
				skipped = append(skipped, fmt.Sprintf("cell %d %s: running (%s)", i, c.Run.Name, r.Holder))
				continue
			}
			src, waits := placed[c.WaitsFor]
			if c.WaitsFor >= 0 && !waits {
				s := RunRecord{Name: plan.Cells[c.WaitsFor].Run.Name}
				if err := overlayState(plan.Spec.Out, c.WaitsFor, &s); err != nil {
					return nil, nil, err
				}
				if s.Status != StatusFinished {
					skipped = append(skipped, fmt.Sprintf("cell %d %s: starts from cell %d %s, which is %s and not submitted",
						i, c.Run.Name, c.WaitsFor, s.Name, s.Status))
					continue
				}
			}
			if !waits {
				free.cells, free.tasks = append(free.cells, i), append(free.tasks, i)
				continue
			}
			target := -1
			for _, d := range rounds[src.array] {
				if !slices.Contains(dependent[d].tasks, src.task) {
					target = d
					break
				}
			}
			if target < 0 {
				target = len(dependent)
				dependent = append(dependent, slurmArray{wave: k, after: src.array})
				rounds[src.array] = append(rounds[src.array], target)
			}
			dependent[target].cells = append(dependent[target].cells, i)
			dependent[target].tasks = append(dependent[target].tasks, src.task)
		}
		for _, a := range append([]slurmArray{free}, dependent...) {
			if len(a.cells) == 0 {
				continue
			}
			for j, c := range a.cells {
				placed[c] = place{len(arrays), a.tasks[j]}
			}
			arrays = append(arrays, a)
		}
	}
	return arrays, skipped, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// script is the sbatch script of array a.
func (s Slurm) script(plan *Plan, a slurmArray) string {
	out := plan.Spec.Out
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n# Sweep %s, wave %d: cells %s (bicyc sweep --plan lists them).\n", out, a.wave, joinInts(a.cells))
	opt := func(format string, args ...any) { fmt.Fprintf(&b, "#SBATCH "+format+"\n", args...) }
	opt("--job-name=bicyc-%s-w%d", filepath.Base(out), a.wave)
	tasks := slices.Clone(a.tasks)
	slices.Sort(tasks)
	array := joinInts(tasks)
	if s.MaxParallel > 0 {
		array += fmt.Sprintf("%%%d", s.MaxParallel)
	}
	opt("--array=%s", array)
	// What the task prints before it reaches its cell's log.
	opt("--output=%s", filepath.Join(out, LogsDir, "slurm-%A_%a.log"))
	opt("--open-mode=append")
	if s.CPUsPerTask > 0 {
		opt("--cpus-per-task=%d", s.CPUsPerTask)
	}
	if s.Requeue {
		opt("--requeue")
		opt("--signal=B:USR1@%d", int(RequeueGrace.Seconds()))
	}
	s.commonOptions(opt)
	// A task waits while another worker holds its cell: after a requeue,
	// the previous worker's lock until its lease expires.
	lease := " --wait-held"
	if s.Lease > 0 {
		lease += " --lease " + s.Lease.String()
	}
	fmt.Fprintf(&b, "set -u\ncase \"$SLURM_ARRAY_TASK_ID\" in\n")
	for j, c := range a.cells {
		fmt.Fprintf(&b, "%d) cell=%d ;;\n", a.tasks[j], c)
	}
	fmt.Fprintf(&b, "*) echo \"task $SLURM_ARRAY_TASK_ID runs no cell\" >&2; exit 1 ;;\nesac\n")
	fmt.Fprintf(&b, "exec >> %s/cell-\"$cell\".log 2>&1\n", shellQuote(filepath.Join(out, LogsDir)))
	fmt.Fprintf(&b, "job=${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\n")
	fmt.Fprintf(&b, "echo \"== $(date -u +%%FT%%TZ) $(hostname) job $job (${SLURM_JOB_ID}) cell $cell\"\n")
	// Not exec: the shell outlives the worker to write the task's exit
	// record, also when the binary cannot be run at all.
	worker := fmt.Sprintf("%s sweep --out %s --cell \"$cell\"%s", shellQuote(s.Bicyc), shellQuote(out), lease)
	if s.Requeue {
		// Slurm's USR1 reaches this shell (B:); it stops the worker with
		// SIGTERM, waits for it, and puts the task back in the queue.
		fmt.Fprintf(&b, "requeue=0 pid=\ntrap 'requeue=1; [ -n \"$pid\" ] && kill -TERM \"$pid\" 2>/dev/null' USR1\n")
		fmt.Fprintf(&b, "%s &\npid=$!\nrc=0\nwhile :; do\n\twait \"$pid\" && rc=0 || rc=$?\n\tkill -0 \"$pid\" 2>/dev/null || break\ndone\n", worker)
	} else {
		fmt.Fprintf(&b, "rc=0\n%s || rc=$?\n", worker)
	}
	exit := shellQuote(filepath.Join(out, SlurmDir)) + "/cell-$cell.exit"
	fmt.Fprintf(&b, "printf '{\"job\":\"%%s\",\"job_id\":\"%%s\",\"exit_code\":%%d,\"host\":\"%%s\",\"time\":\"%%s\"}\\n' \\\n")
	fmt.Fprintf(&b, "\t\"$job\" \"$SLURM_JOB_ID\" \"$rc\" \"$(hostname)\" \"$(date -u +%%FT%%TZ)\" > %s.tmp && mv %s.tmp %s\n", exit, exit, exit)
	fmt.Fprintf(&b, "echo \"== $(date -u +%%FT%%TZ) exit status $rc\"\n")
	if s.Requeue {
		fmt.Fprintf(&b, "if [ \"$requeue\" = 1 ]; then\n\techo \"== $(date -u +%%FT%%TZ) time limit near: requeued\"\n\tscontrol requeue \"$SLURM_JOB_ID\"\nfi\n")
	}
	fmt.Fprintf(&b, "exit $rc\n")
	return b.String()
}

// commonOptions writes the #SBATCH lines every job of the sweep shares.
func (s Slurm) commonOptions(opt func(string, ...any)) {
	opt("--chdir=%s", s.Workdir)
	for _, o := range [][2]string{{"partition", s.Partition}, {"time", s.Time}, {"mem", s.Mem}, {"account", s.Account}} {
		if o[1] != "" {
			opt("--%s=%s", o[0], o[1])
		}
	}
	for _, e := range s.Extra {
		opt("%s", e)
	}
}

// reportScript is the sbatch script of the report job.
func (s Slurm) reportScript(plan *Plan) string {
	out := plan.Spec.Out
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n# Sweep %s: the report, once every wave has ended.\n", out)
	opt := func(format string, args ...any) { fmt.Fprintf(&b, "#SBATCH "+format+"\n", args...) }
	opt("--job-name=bicyc-%s-report", filepath.Base(out))
	opt("--output=%s", filepath.Join(out, LogsDir, "report.log"))
	opt("--open-mode=append")
	opt("--cpus-per-task=1")
	s.commonOptions(opt)
	fmt.Fprintf(&b, "set -eu\necho \"== $(date -u +%%FT%%TZ) $(hostname) job ${SLURM_JOB_ID} report\"\n")
	fmt.Fprintf(&b, "exec %s report %s\n", shellQuote(s.Bicyc), shellQuote(out))
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var (
	submittedLine = regexp.MustCompile(`^wave (\d+) cells ([\d,]+): job (\d+)$`)
	reportLine    = regexp.MustCompile(`^report: job (\d+)$`)
)

// SubmittedArray is a job array that SubmitSlurm submitted.
type SubmittedArray struct {
	Wave  int
	Cells string // the cell indices, comma-separated
	Job   string
}

// SubmitSlurm runs the submit.sh that WriteSlurm wrote (sbatch must be on
// PATH) and returns the job arrays submitted, in order, and the report
// job's id.
func SubmitSlurm(ctx context.Context, submit string) ([]SubmittedArray, string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", submit)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		// Waves submitted before the failure are queued: say which.
		done := strings.TrimSpace(stdout.String())
		if done == "" {
			done = "nothing"
		}
		return nil, "", fmt.Errorf("%s: %w: %s (submitted before it failed: %s)", submit, err, strings.TrimSpace(stderr.String()), done)
	}
	var jobs []SubmittedArray
	report := ""
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if m := submittedLine.FindStringSubmatch(line); m != nil {
			k, _ := strconv.Atoi(m[1])
			jobs = append(jobs, SubmittedArray{Wave: k, Cells: m[2], Job: m[3]})
		}
		if m := reportLine.FindStringSubmatch(line); m != nil {
			report = m[1]
		}
	}
	return jobs, report, nil
}
