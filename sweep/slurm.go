package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
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
}

// reservedSbatch are the sbatch options the scripts set, which an Extra
// option must not set again, with what to use instead.
var reservedSbatch = map[string]string{
	"array":               "the arrays are the sweep's cells; to cap the tasks at once use --max-parallel",
	"output":              "each cell's output goes to <out>/logs/cell-<index>.log",
	"error":               "each cell's output goes to <out>/logs/cell-<index>.log",
	"open-mode":           "a resumed cell appends to its log",
	"dependency":          "the waves depend on each other, and the report job on all",
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
		for _, r := range sortedKeys(reservedSbatch) {
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

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// WriteSlurm writes the sbatch scripts of the plan's unfinished cells into
// <out>/slurm, after freezing the plan (Plan.Write), and returns the path
// of submit.sh, which submits them:
//
//	wave-<k>.sbatch  one job array per wave whose array indices are the
//	                 cell indices (`--array=1,3`), so SLURM_ARRAY_TASK_ID
//	                 is the cell `bicyc sweep --cell` runs; each cell's
//	                 output is appended to <out>/logs/cell-<index>.log
//	report.sbatch    bicyc report <out>, once every wave has ended
//	                 however it ended (afterany), into <out>/logs/report.log
//	submit.sh        sbatch for every wave in order, each with
//	                 --dependency=afterok:<the wave before> and
//	                 --kill-on-invalid-dep=yes, printing "wave <k>: job <id>",
//	                 then the report job ("report: job <id>")
//
// Each task writes its exit record (<out>/slurm/cell-<i>.exit) when the
// command it ran exits, which ReadStatus reads for cells bicyc never
// recorded; the records of the cells submitted again are removed.
//
// Finished cells are left out, so a sweep is resubmitted after a failure
// with the same command. The sweep directory must be an absolute path.
func WriteSlurm(plan *Plan, s Slurm) (string, error) {
	out := plan.Spec.Out
	if !filepath.IsAbs(out) {
		return "", fmt.Errorf("slurm: the sweep directory %q must be absolute: the jobs run elsewhere", out)
	}
	if err := s.Validate(); err != nil {
		return "", err
	}
	if err := plan.Write(); err != nil {
		return "", err
	}
	for _, d := range []string{SlurmDir, LogsDir} {
		if err := os.MkdirAll(filepath.Join(out, d), 0o755); err != nil {
			return "", err
		}
	}
	var submit strings.Builder
	submit.WriteString("#!/bin/bash\n# Submits the sweep's job arrays in order (written by bicyc sweep --submit slurm).\nset -euo pipefail\ncd \"$(dirname \"$0\")\"\n")
	prev := ""
	var waves []string
	for k, wave := range plan.Waves() {
		var cells []string
		for _, i := range wave {
			state, _, err := runState(plan.Dir(i))
			if err != nil {
				return "", err
			}
			if state != StatusFinished {
				cells = append(cells, strconv.Itoa(i))
				if err := os.Remove(taskExitFile(out, i)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return "", err
				}
			}
		}
		if len(cells) == 0 {
			continue
		}
		name := fmt.Sprintf("wave-%d.sbatch", k)
		if err := durable.WriteFile(filepath.Join(out, SlurmDir, name), []byte(s.script(plan, k, cells))); err != nil {
			return "", err
		}
		dep := ""
		if prev != "" {
			dep = fmt.Sprintf(" --dependency=afterok:$%s --kill-on-invalid-dep=yes", prev)
		}
		v := fmt.Sprintf("job%d", k)
		fmt.Fprintf(&submit, "%s=$(sbatch --parsable%s %s)\n%s=${%s%%%%;*}\necho \"wave %d: job $%s\"\n", v, dep, name, v, v, k, v)
		prev = v
		waves = append(waves, "$"+v)
	}
	if len(waves) > 0 {
		if err := durable.WriteFile(filepath.Join(out, SlurmDir, "report.sbatch"), []byte(s.reportScript(plan))); err != nil {
			return "", err
		}
		fmt.Fprintf(&submit, "report=$(sbatch --parsable --dependency=afterany:%s report.sbatch)\nreport=${report%%%%;*}\necho \"report: job $report\"\n", strings.Join(waves, ":"))
	}
	path := filepath.Join(out, SlurmDir, "submit.sh")
	return path, durable.WriteFile(path, []byte(submit.String()))
}

// script is the sbatch script of wave k, an array over cells.
func (s Slurm) script(plan *Plan, k int, cells []string) string {
	out := plan.Spec.Out
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n# Sweep %s, wave %d: cells %s (bicyc sweep --plan lists them).\n", out, k, strings.Join(cells, ", "))
	opt := func(format string, args ...any) { fmt.Fprintf(&b, "#SBATCH "+format+"\n", args...) }
	opt("--job-name=bicyc-%s-w%d", filepath.Base(out), k)
	array := strings.Join(cells, ",")
	if s.MaxParallel > 0 {
		array += fmt.Sprintf("%%%d", s.MaxParallel)
	}
	opt("--array=%s", array)
	opt("--output=%s", filepath.Join(out, LogsDir, "cell-%a.log"))
	opt("--open-mode=append")
	if s.CPUsPerTask > 0 {
		opt("--cpus-per-task=%d", s.CPUsPerTask)
	}
	s.commonOptions(opt)
	lease := ""
	if s.Lease > 0 {
		lease = " --lease " + s.Lease.String()
	}
	// Not exec: the shell outlives the worker to write the task's exit
	// record, also when the binary cannot be run at all.
	fmt.Fprintf(&b, "set -u\njob=${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\n")
	fmt.Fprintf(&b, "echo \"== $(date -u +%%FT%%TZ) $(hostname) job $job (${SLURM_JOB_ID}) cell ${SLURM_ARRAY_TASK_ID}\"\n")
	fmt.Fprintf(&b, "rc=0\n%s sweep --out %s --cell \"$SLURM_ARRAY_TASK_ID\"%s || rc=$?\n", shellQuote(s.Bicyc), shellQuote(out), lease)
	exit := shellQuote(filepath.Join(out, SlurmDir)) + "/cell-${SLURM_ARRAY_TASK_ID}.exit"
	fmt.Fprintf(&b, "printf '{\"job\":\"%%s\",\"job_id\":\"%%s\",\"exit_code\":%%d,\"host\":\"%%s\",\"time\":\"%%s\"}\\n' \\\n")
	fmt.Fprintf(&b, "\t\"$job\" \"$SLURM_JOB_ID\" \"$rc\" \"$(hostname)\" \"$(date -u +%%FT%%TZ)\" > %s.tmp && mv %s.tmp %s\n", exit, exit, exit)
	fmt.Fprintf(&b, "echo \"== $(date -u +%%FT%%TZ) exit status $rc\"\nexit $rc\n")
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
	submittedLine = regexp.MustCompile(`^wave (\d+): job (\d+)$`)
	reportLine    = regexp.MustCompile(`^report: job (\d+)$`)
)

// SubmitSlurm runs the submit.sh that WriteSlurm wrote (sbatch must be on
// PATH) and returns the job id of each submitted wave, by wave, and of the
// report job.
func SubmitSlurm(ctx context.Context, submit string) (map[int]string, string, error) {
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
	jobs, report := map[int]string{}, ""
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if m := submittedLine.FindStringSubmatch(line); m != nil {
			k, _ := strconv.Atoi(m[1])
			jobs[k] = m[2]
		}
		if m := reportLine.FindStringSubmatch(line); m != nil {
			report = m[1]
		}
	}
	return jobs, report, nil
}
