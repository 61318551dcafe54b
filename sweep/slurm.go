package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

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
	// ("--qos=short", "--gres=gpu:1").
	Extra []string
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
	for _, e := range s.Extra {
		if !strings.HasPrefix(e, "--") || strings.ContainsAny(e, "\n") {
			errs = append(errs, fmt.Errorf("slurm: extra sbatch option %q: want one --option[=value]", e))
		}
	}
	return errors.Join(errs...)
}

// WriteSlurm writes the sbatch scripts of the plan's unfinished cells into
// <out>/slurm, after freezing the plan (Plan.Write), and returns the path
// of submit.sh, which submits them:
//
//	wave-<k>.sbatch  one job array per wave whose array indices are the
//	                 cell indices (`--array=1,3`), so SLURM_ARRAY_TASK_ID
//	                 is the cell `bicyc sweep --cell` runs; each cell's
//	                 output is appended to <out>/logs/cell-<index>.log
//	submit.sh        sbatch for every wave in order, each with
//	                 --dependency=afterok:<the wave before> and
//	                 --kill-on-invalid-dep=yes, printing "wave <k>: job <id>"
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
	for k, wave := range plan.Waves() {
		var cells []string
		for _, i := range wave {
			state, _, err := runState(plan.Dir(i))
			if err != nil {
				return "", err
			}
			if state != StatusFinished {
				cells = append(cells, strconv.Itoa(i))
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
	opt("--array=%s", strings.Join(cells, ","))
	opt("--output=%s", filepath.Join(out, LogsDir, "cell-%a.log"))
	opt("--open-mode=append")
	opt("--chdir=%s", s.Workdir)
	if s.CPUsPerTask > 0 {
		opt("--cpus-per-task=%d", s.CPUsPerTask)
	}
	for _, o := range [][2]string{{"partition", s.Partition}, {"time", s.Time}, {"mem", s.Mem}, {"account", s.Account}} {
		if o[1] != "" {
			opt("--%s=%s", o[0], o[1])
		}
	}
	for _, e := range s.Extra {
		opt("%s", e)
	}
	fmt.Fprintf(&b, "set -eu\necho \"== $(date -u +%%FT%%TZ) $(hostname) job ${SLURM_JOB_ID} cell ${SLURM_ARRAY_TASK_ID}\"\n")
	fmt.Fprintf(&b, "exec %s sweep --out %s --cell \"$SLURM_ARRAY_TASK_ID\"\n", shellQuote(s.Bicyc), shellQuote(out))
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var submittedLine = regexp.MustCompile(`^wave (\d+): job (\d+)$`)

// SubmitSlurm runs the submit.sh that WriteSlurm wrote (sbatch must be on
// PATH) and returns the job id of each submitted wave, by wave.
func SubmitSlurm(ctx context.Context, submit string) (map[int]string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", submit)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		// Waves submitted before the failure are queued: say which.
		done := strings.TrimSpace(stdout.String())
		if done == "" {
			done = "nothing"
		}
		return nil, fmt.Errorf("%s: %w: %s (submitted before it failed: %s)", submit, err, strings.TrimSpace(stderr.String()), done)
	}
	jobs := map[int]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if m := submittedLine.FindStringSubmatch(line); m != nil {
			k, _ := strconv.Atoi(m[1])
			jobs[k] = m[2]
		}
	}
	return jobs, nil
}
