package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/lockfile"
)

// cellOutcome is cells/<name>.json: how the last worker to run a cell
// left it. Only the worker holding the cell's lock writes it.
type cellOutcome struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// WallSeconds adds up every session of the cell, on any machine.
	WallSeconds float64   `json:"wall_seconds"`
	Host        string    `json:"host"`
	Updated     time.Time `json:"updated"`
	// SlurmJob is the Slurm array job and task (123_4) and SlurmJobID the
	// task's own job id (125) of the worker, when Slurm ran it.
	SlurmJob   string `json:"slurm_job,omitempty"`
	SlurmJobID string `json:"slurm_job_id,omitempty"`
}

// readOutcome reads the outcome of the named cell; ok is false when no
// worker has recorded one.
func readOutcome(out, name string) (o cellOutcome, ok bool, err error) {
	path := cellFile(out, name, ".json")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return o, false, nil
	}
	if err != nil {
		return o, false, err
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return o, false, fmt.Errorf("%s: %w: %w", path, ErrInvalidRecord, err)
	}
	return o, true, nil
}

// overlayStates sets the status, error, wall time and log of every run of
// rec from what the sweep directory out shows now, so that cells run by
// workers anywhere are reported without any process's memory:
//
//	finished  the run completed every task (metrics.json)
//	running   a live worker holds the cell's lock (Holder names it)
//	failed    the last worker recorded an error
//	stopped   started, then interrupted (killed, cancelled, out of time):
//	          the next worker resumes it
//	pending   not started
func overlayStates(out string, rec *Record) error {
	for i := range rec.Runs {
		if err := overlayState(out, i, &rec.Runs[i]); err != nil {
			return err
		}
	}
	return nil
}

// overlayState sets the state of r, the run of cell i, as overlayStates
// does.
func overlayState(out string, i int, r *RunRecord) error {
	state, _, err := runState(filepath.Join(out, r.Name))
	if err != nil {
		return err
	}
	o, ok, err := readOutcome(out, r.Name)
	if err != nil {
		return err
	}
	r.Holder = ""
	if ok {
		r.WallSeconds = o.WallSeconds
	}
	holder, held := lockfile.Holder(cellFile(out, r.Name, ".lock"))
	switch {
	case state == StatusFinished:
		r.Status, r.Error = StatusFinished, ""
	case held:
		r.Status, r.Error, r.Holder = StatusRunning, "", holder.String()
	case ok && o.Status == StatusFailed:
		r.Status, r.Error = StatusFailed, o.Error
		if o.SlurmJob != "" {
			r.Error = fmt.Sprintf("slurm job %s: %s", o.SlurmJob, o.Error)
		}
	case state == StatusRunning || ok:
		r.Status, r.Error = StatusStopped, ""
	default:
		r.Status, r.Error = StatusPending, ""
	}
	// A task that ended before bicyc recorded the cell (the binary missing
	// on the node, a refusal, a kill) is known only from the exit record
	// its sbatch script wrote.
	if r.Status == StatusPending || r.Status == StatusStopped {
		e, exited, err := readTaskExit(out, i)
		if err != nil {
			return err
		}
		if exited && e.ExitCode != 0 && !ok {
			r.Status, r.Error = StatusFailed, e.reason()
		}
	}
	r.Log = ""
	if log := CellLog(i); fileExists(filepath.Join(out, log)) {
		r.Log = log
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// ReadStatus reads the record of the sweep in out (sweep.json) with every
// run's state as the directory shows it now (see overlayStates): the cells
// may have run on many machines. The record is not rewritten.
func ReadStatus(out string) (*Record, error) {
	rec, err := ReadRecord(filepath.Join(out, RecordFile))
	if err != nil {
		return nil, err
	}
	return rec, overlayStates(out, rec)
}

// FormatStatus lists rec as `bicyc sweep --status` prints it: a count per
// state, then one line per cell that is not finished with its holder, or
// its error, and the logs to read (the scheduler's log and the run's
// log.txt, relative to the sweep directory out).
func FormatStatus(out string, rec *Record) string {
	counts := map[string]int{}
	var b strings.Builder
	for i, r := range rec.Runs {
		counts[r.Status]++
		if r.Status == StatusFinished {
			continue
		}
		fmt.Fprintf(&b, "cell %d %s: %s", i, r.Name, r.Status)
		switch {
		case r.Holder != "":
			fmt.Fprintf(&b, " (%s)", r.Holder)
		case r.Status == StatusPending && r.WaitsFor != "":
			fmt.Fprintf(&b, " (waits for %s)", r.WaitsFor)
		}
		if r.Error != "" {
			fmt.Fprintf(&b, ": %s", r.Error)
		}
		var logs []string
		if r.Log != "" {
			logs = append(logs, r.Log)
		}
		if runLog := filepath.Join(r.Name, "log.txt"); fileExists(filepath.Join(out, runLog)) {
			logs = append(logs, runLog)
		}
		if len(logs) > 0 && r.Status != StatusPending {
			fmt.Fprintf(&b, "\n    log: %s", strings.Join(logs, ", "))
		}
		b.WriteString("\n")
	}
	var head []string
	for _, s := range []string{StatusFinished, StatusRunning, StatusFailed, StatusStopped, StatusPending} {
		if counts[s] > 0 {
			head = append(head, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	return fmt.Sprintf("sweep %s: %d cells: %s\n%s", out, len(rec.Runs), strings.Join(head, ", "), b.String())
}

// writeOutcome records how this worker leaves the named cell, and the Slurm
// job running it, if any.
func writeOutcome(out, name string, o cellOutcome) error {
	o.Host, _ = os.Hostname()
	o.Updated = time.Now().UTC()
	if job, task := os.Getenv("SLURM_ARRAY_JOB_ID"), os.Getenv("SLURM_ARRAY_TASK_ID"); job != "" && task != "" {
		o.SlurmJob = job + "_" + task
	}
	o.SlurmJobID = os.Getenv("SLURM_JOB_ID")
	return durable.WriteJSON(cellFile(out, name, ".json"), o)
}
