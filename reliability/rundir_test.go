package reliability

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/rundir"
	"github.com/bicyc/bicyc/train"
)

// runView is what checkRunDir saw in a run directory.
type runView struct {
	// Latest is the number of tasks of the checkpoint checkpoints/latest
	// names; 0 when there is none yet.
	Latest int
	// Metrics is metrics.json's completed_tasks, -1 without metrics.json.
	Metrics int
	// Hidden lists the dot-prefixed leftovers in checkpoints/ (temporary
	// directories and files of interrupted writes).
	Hidden []string
	// Model reports whether <run>/model exists (and so passed bundle.Open).
	Model bool
}

var checkpointName = regexp.MustCompile(`^task-(\d+)$`)

// readRunConfig decodes a run's config.yaml strictly, as train.Resume does.
func readRunConfig(dir string) (config.Config, error) {
	var cfg config.Config
	b, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
	if err != nil {
		return cfg, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("%s: %w", filepath.Join(dir, "config.yaml"), err)
	}
	return cfg, nil
}

// checkRunDir checks every file of a (possibly just killed) run directory
// that a reader can see, and returns what it saw. Every problem is an error.
func checkRunDir(dir string) (runView, error) {
	v := runView{Metrics: -1}
	cfg, err := readRunConfig(dir)
	if err != nil {
		return v, err
	}
	var stream struct {
		Tasks [][]int `json:"tasks"`
	}
	if err := readJSONFile(filepath.Join(dir, "stream.json"), &stream); err != nil {
		return v, err
	}
	ckpts := filepath.Join(dir, "checkpoints")
	entries, err := os.ReadDir(ckpts)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return v, err
	}
	loaded := map[string]int{}
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "."):
			v.Hidden = append(v.Hidden, name)
		case name == "latest":
		default:
			m := checkpointName.FindStringSubmatch(name)
			if m == nil || !e.IsDir() {
				return v, fmt.Errorf("%s: unexpected visible entry %q", ckpts, name)
			}
			st, err := train.LoadCheckpoint(filepath.Join(ckpts, name), cfg)
			if err != nil {
				return v, fmt.Errorf("visible checkpoint %s does not load: %w", name, err)
			}
			if n, _ := strconv.Atoi(m[1]); st.Completed != n {
				return v, fmt.Errorf("checkpoint %s holds %d completed tasks", name, st.Completed)
			}
			if len(st.Prototypes) != countClasses(stream.Tasks, st.Completed) {
				return v, fmt.Errorf("checkpoint %s has %d prototypes after %d tasks", name, len(st.Prototypes), st.Completed)
			}
			loaded[name] = st.Completed
		}
	}
	latest, err := os.ReadFile(filepath.Join(ckpts, "latest"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return v, err
	default:
		name := strings.TrimSpace(string(latest))
		n, ok := loaded[name]
		if !ok {
			return v, fmt.Errorf("checkpoints/latest names %q, which is not a loadable checkpoint", latest)
		}
		v.Latest = n
	}
	if _, err := os.Stat(filepath.Join(dir, "metrics.json")); err == nil {
		var s rundir.Summary
		if err := readJSONFile(filepath.Join(dir, "metrics.json"), &s); err != nil {
			return v, err
		}
		if s.Completed > v.Latest {
			return v, fmt.Errorf("metrics.json reports %d tasks, the latest checkpoint %d", s.Completed, v.Latest)
		}
		v.Metrics = s.Completed
	}
	model := filepath.Join(dir, "model")
	if _, err := os.Lstat(model); err == nil {
		if _, err := bundle.Open(model); err != nil {
			return v, fmt.Errorf("model directory: %w", err)
		}
		v.Model = true
	}
	return v, nil
}

func countClasses(tasks [][]int, completed int) int {
	n := 0
	for _, t := range tasks[:min(completed, len(tasks))] {
		n += len(t)
	}
	return n
}

func readJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// timingKeys are the fields of a task report that measure time, the only
// ones two runs of the same seed may disagree on.
var timingKeys = []string{"stage1_seconds", "stage1_images_per_second", "stage2_seconds", "transport_seconds", "evaluation_seconds"}

// deterministicMetrics reads metrics.json with the timings of every report
// removed.
func deterministicMetrics(t *testing.T, path string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := readJSONFile(path, &m); err != nil {
		t.Fatal(err)
	}
	reports, _ := m["reports"].([]any)
	for _, r := range reports {
		if rep, ok := r.(map[string]any); ok {
			for _, k := range timingKeys {
				delete(rep, k)
			}
		}
	}
	return m
}

// compareMetrics fails the test unless the two metrics.json files are
// equal apart from timings.
func compareMetrics(t *testing.T, want, got string) {
	t.Helper()
	a, b := deterministicMetrics(t, want), deterministicMetrics(t, got)
	if !reflect.DeepEqual(a, b) {
		ja, _ := json.MarshalIndent(a, "", " ")
		jb, _ := json.MarshalIndent(b, "", " ")
		t.Errorf("metrics differ (timings removed):\n%s:\n%s\n%s:\n%s", want, ja, got, jb)
	}
}

// compareModels fails the test unless the two model directories open and
// list the same files with the same SHA-256.
func compareModels(t *testing.T, want, got string) {
	t.Helper()
	a, err := bundle.Open(want)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(got)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Manifest.Files, b.Manifest.Files) {
		t.Errorf("model files differ:\n%s: %v\n%s: %v", want, a.Manifest.Files, got, b.Manifest.Files)
	}
}
