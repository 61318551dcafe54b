package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bicyc/bicyc/config"
)

// RecordFile is the sweep record's name inside the sweep directory.
const RecordFile = "sweep.json"

// ErrInvalidRecord is wrapped by every error about a sweep record that
// cannot be read.
var ErrInvalidRecord = errors.New("invalid sweep record")

// Run statuses in a sweep record.
const (
	StatusPending  = "pending"
	StatusRunning  = "running"
	StatusFinished = "finished"
	StatusStopped  = "stopped"
	StatusFailed   = "failed"
)

// Record is sweep.json: the definition a sweep ran with and the state
// of each of its runs when it was last written (Plan.Write, and after every
// run of a one-process sweep); ReadStatus gives the state now, wherever the
// cells ran. It is rewritten atomically, so a killed sweep leaves a valid
// record.
type Record struct {
	Spec Spec        `json:"spec"`
	Runs []RunRecord `json:"runs"`
}

// RunRecord is one run of a sweep record.
type RunRecord struct {
	Name   string        `json:"name"`
	Method config.Method `json:"method"`
	Seed   int64         `json:"seed"`
	// Variant is the run's named variant (Spec.Variants), "" for a method.
	Variant  string `json:"variant,omitempty"`
	Ablation string `json:"ablation,omitempty"`
	LossBi   bool   `json:"loss_bi"`
	LossCyc  bool   `json:"loss_cyc"`
	// Status is pending, running, finished, stopped (cancelled) or failed.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// WallSeconds adds up the wall-clock time of every session of the run,
	// export included.
	WallSeconds float64 `json:"wall_seconds"`
	// WaitsFor names the run this one starts from (Cell.WaitsFor), Rescore
	// tells whether it takes all its tasks or only the first.
	WaitsFor string `json:"waits_for,omitempty"`
	Rescore  bool   `json:"rescore,omitempty"`
	// Holder is the live worker running the cell (ReadStatus), Log the
	// scheduler's log of the cell relative to the sweep directory, "" when
	// there is none.
	Holder string `json:"holder,omitempty"`
	Log    string `json:"log,omitempty"`
}

// Count is the number of runs of r whose Status is status.
func (r *Record) Count(status string) int {
	n := 0
	for _, run := range r.Runs {
		if run.Status == status {
			n++
		}
	}
	return n
}

// ReadRecord reads a sweep.json. A missing file gives an error
// wrapping fs.ErrNotExist; a corrupt one an error wrapping ErrInvalidRecord.
func ReadRecord(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rec Record
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrInvalidRecord, err)
	}
	for i, r := range rec.Runs {
		if r.Name == "" || r.Name != filepath.Base(r.Name) || r.Name == "." || r.Name == ".." {
			return nil, fmt.Errorf("%s: %w: run %d has name %q, not a directory name", path, ErrInvalidRecord, i, r.Name)
		}
	}
	return &rec, nil
}

// newRecord starts the record of plan, keeping the wall time of runs
// that an earlier session of the sweep recorded.
func newRecord(spec Spec, plan []PlannedRun) *Record {
	old := map[string]float64{}
	if prev, err := ReadRecord(filepath.Join(spec.Out, RecordFile)); err == nil {
		for _, r := range prev.Runs {
			old[r.Name] = r.WallSeconds
		}
	}
	rec := &Record{Spec: spec}
	rec.Spec.Config, rec.Spec.Out = workingRelative(spec.Config), workingRelative(spec.Out)
	for _, p := range plan {
		rec.Runs = append(rec.Runs, RunRecord{
			Name: p.Name, Method: p.Variant.Method, Variant: p.Variant.Name, Seed: p.Seed, Ablation: p.Variant.Tag(),
			LossBi: p.Variant.Bi, LossCyc: p.Variant.Cyc, Status: StatusPending, WallSeconds: old[p.Name],
		})
	}
	return rec
}

// workingRelative returns path relative to the working directory when it
// lies inside it, so that a record names files the way the repository does
// and not by one machine's absolute path; any other path comes back
// unchanged.
func workingRelative(path string) string {
	if !filepath.IsAbs(path) {
		return path
	}
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}
