package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bicyc/bicyc/config"
)

// The records of a run directory, beside its checkpoints: config.yaml (the
// resolved configuration; written last when a run is created, so it marks
// a run that can be resumed), stream.json (the task stream) and
// metrics.json (the metrics after the last completed task).
const (
	ConfigFile  = "config.yaml"
	StreamFile  = "stream.json"
	MetricsFile = "metrics.json"
)

// ErrInvalidRun is wrapped by every error about a run directory whose
// records are unreadable, corrupt or inconsistent.
var ErrInvalidRun = errors.New("invalid run directory")

// ReadConfig reads the config.yaml of the run in dir (config.ReadRun: keys
// it predates take their defaults, or the value that reproduces the run
// where the default changed training) and validates it. A directory
// without one gives an error wrapping fs.ErrNotExist; any other failure
// wraps ErrInvalidRun and names the file.
func ReadConfig(dir string) (config.Config, error) {
	path := filepath.Join(dir, ConfigFile)
	cfg, err := config.ReadRun(path)
	if errors.Is(err, fs.ErrNotExist) {
		return config.Config{}, err
	}
	if err != nil {
		return config.Config{}, fmt.Errorf("%w: %w", ErrInvalidRun, err)
	}
	if err := cfg.Validate(); err != nil {
		return config.Config{}, fmt.Errorf("%s: %w: %w", path, ErrInvalidRun, err)
	}
	return cfg, nil
}

// Stream is stream.json: the task stream, the class names, and the tasks
// added after the fact by train.Learn.
type Stream struct {
	Order      []int         `json:"order"`
	Tasks      [][]int       `json:"tasks"`
	ClassNames []string      `json:"class_names"`
	Learned    []LearnedTask `json:"learned,omitempty"`
}

// LearnedTask records a task added to a finished run by train.Learn: its
// class ids and the image folders its classes came from, so that a resumed
// or re-evaluated run can load them again.
type LearnedTask struct {
	Task     int    `json:"task"` // 0-based index into the task stream
	TrainDir string `json:"train_dir"`
	TestDir  string `json:"test_dir"`
	Classes  []int  `json:"classes"`
	// Config is the configuration the task was learned with, when it
	// differed from the run's (train.LearnOptions.Config); nil means the run's.
	Config *config.Config `json:"config,omitempty"`
}

// ReadStream reads the stream.json of the run in dir; errors name the file.
func ReadStream(dir string) (Stream, error) {
	var s Stream
	path := filepath.Join(dir, StreamFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Progress is how far the run in a directory got, from its records alone.
type Progress struct {
	// Started is true once the directory holds a run (config.yaml).
	Started bool
	// Completed and Tasks are metrics.json's completed_tasks and tasks;
	// both 0 before the first task completes.
	Completed, Tasks int
}

// Finished reports whether the run completed every task of its stream.
func (p Progress) Finished() bool { return p.Tasks > 0 && p.Completed == p.Tasks }

// ReadProgress reads how far the run in dir got. It reads only the counts
// of metrics.json, so a run being written is never refused for a record it
// has not finished.
func ReadProgress(dir string) (Progress, error) {
	if _, err := os.Stat(filepath.Join(dir, ConfigFile)); errors.Is(err, fs.ErrNotExist) {
		return Progress{}, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, MetricsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Progress{Started: true}, nil
	}
	if err != nil {
		return Progress{}, err
	}
	var s struct {
		Completed int `json:"completed_tasks"`
		Tasks     int `json:"tasks"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return Progress{}, fmt.Errorf("%s: %w: %w", filepath.Join(dir, MetricsFile), ErrInvalidRun, err)
	}
	return Progress{Started: true, Completed: s.Completed, Tasks: s.Tasks}, nil
}
