package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bicyc/bicyc/lockfile"
)

// Exit statuses of a worker (bicyc sweep --cell) that refused its cell,
// so that a scheduler's record of the task tells a refusal from a failure.
const (
	// ExitHeld: another live worker holds the cell (lockfile.ErrHeld).
	ExitHeld = 75
	// ExitWaiting: the cell it starts from has not finished (ErrWaiting).
	ExitWaiting = 76
)

// ExitCode is the exit status of a worker whose RunCell returned err: 0,
// ExitHeld, ExitWaiting, or 1 for any other error.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, lockfile.ErrHeld):
		return ExitHeld
	case errors.Is(err, ErrWaiting):
		return ExitWaiting
	}
	return 1
}

// taskExit is <out>/slurm/cell-<i>.exit: the sbatch script of cell i writes
// it when the command it ran exits, whatever happened, so that a cell
// bicyc never recorded (the binary missing on the node, the process
// killed by a signal) still shows how its task ended.
type taskExit struct {
	Job      string `json:"job"`    // array job id _ task id, as squeue and sacct name it
	JobID    string `json:"job_id"` // the task's own job id
	ExitCode int    `json:"exit_code"`
	Host     string `json:"host"`
	Time     string `json:"time"`
}

func taskExitFile(out string, i int) string {
	return filepath.Join(out, SlurmDir, fmt.Sprintf("cell-%d.exit", i))
}

// readTaskExit reads the exit record of cell i; ok is false without one.
func readTaskExit(out string, i int) (e taskExit, ok bool, err error) {
	b, err := os.ReadFile(taskExitFile(out, i))
	if errors.Is(err, fs.ErrNotExist) {
		return e, false, nil
	}
	if err != nil {
		return e, false, err
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, false, fmt.Errorf("%s: %w: %w", taskExitFile(out, i), ErrInvalidRecord, err)
	}
	return e, true, nil
}

// reason says in words how a task that exited with e ended.
func (e taskExit) reason() string {
	var why string
	switch {
	case e.ExitCode == ExitHeld:
		why = "refused: another worker held the cell"
	case e.ExitCode == ExitWaiting:
		why = "refused: the cell it starts from had not finished"
	case e.ExitCode == 126 || e.ExitCode == 127:
		why = fmt.Sprintf("the bicyc binary could not be run on %s (exit status %d: not found or not executable)", e.Host, e.ExitCode)
	case e.ExitCode > 128:
		why = fmt.Sprintf("killed by signal %d on %s", e.ExitCode-128, e.Host)
	default:
		why = fmt.Sprintf("exit status %d on %s", e.ExitCode, e.Host)
	}
	return fmt.Sprintf("slurm job %s: %s", e.Job, why)
}
