package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/durable"
	"github.com/bicyc/bicyc/train"
)

// sweepFile is the sweep record's name inside the sweep directory.
const sweepFile = "sweep.json"

// ErrInvalidSpec is wrapped by every error about a sweep definition.
var ErrInvalidSpec = errors.New("invalid sweep definition")

// ErrConfigChanged is wrapped when a sweep directory already holds a run
// of the same name made with a different configuration: resuming it would
// mix two experiments.
var ErrConfigChanged = errors.New("run configuration changed")

// methods are the values of the config key method (config.Config.Method).
var methods = []string{"bicyc", "adagauss", "finetune"}

// Spec is a sweep definition, the YAML of configs/sweeps/:
//
//	config: ../fmnist-t5-e10.yaml   # relative to the sweep file
//	out: runs/sweeps/fmnist-t5-e10  # relative to the working directory
//	seeds: 3                        # seeds 0, 1, 2
//	methods: [bicyc, adagauss, finetune]
//	ablation: true                  # bicyc with loss.bi x loss.cyc on/off
//	sets: [eval.drift=true]         # --set overrides of every run
//
// Every run gets the config file, then sets, then its own method, seed
// and (ablation) loss.bi, loss.cyc.
type Spec struct {
	Config   string   `yaml:"config" json:"config"`
	Out      string   `yaml:"out" json:"out"`
	Seeds    int      `yaml:"seeds" json:"seeds"`
	Methods  []string `yaml:"methods" json:"methods"`
	Ablation bool     `yaml:"ablation" json:"ablation"`
	Sets     []string `yaml:"sets" json:"sets"`
}

// ReadSpec reads a sweep definition strictly (unknown keys are errors) and
// makes its config path relative to the sweep file's directory usable from
// the working directory. It does not validate: see Spec.Validate.
func ReadSpec(path string) (Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return Spec{}, err
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty file")
		}
		return Spec{}, fmt.Errorf("sweep %s: %w: %w", path, ErrInvalidSpec, err)
	}
	if s.Config != "" && !filepath.IsAbs(s.Config) {
		s.Config = filepath.Join(filepath.Dir(path), s.Config)
	}
	return s, nil
}

// sweepKeys are the config keys a sweep sets per run; sets must leave them
// alone. loss.bi and loss.cyc join them when the ablation grid is on.
var sweepKeys = []string{"seed", "method", "run_dir", "run_name", "export.dir"}

// Validate reports every problem of s at once, each naming its key.
func (s Spec) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrInvalidSpec, fmt.Sprintf(format, args...)))
	}
	if s.Config == "" {
		bad("config: no config file")
	}
	if s.Out == "" {
		bad("out: no output directory")
	}
	if s.Seeds < 1 {
		bad("seeds: must be >= 1, got %d", s.Seeds)
	}
	if len(s.Methods) == 0 && !s.Ablation {
		bad("methods: none, and no ablation")
	}
	for i, m := range s.Methods {
		if !slices.Contains(methods, m) {
			bad("methods: %q is not one of %s", m, strings.Join(methods, ", "))
		}
		if slices.Index(s.Methods, m) != i {
			bad("methods: %q listed twice", m)
		}
	}
	reserved := sweepKeys
	if s.Ablation {
		reserved = append(slices.Clip(reserved), "loss.bi", "loss.cyc")
	}
	for _, kv := range s.Sets {
		key, _, ok := strings.Cut(kv, "=")
		if !ok {
			bad("sets: %q is not key=value", kv)
			continue
		}
		if slices.Contains(reserved, key) {
			bad("sets: %q: the sweep sets %s itself", kv, key)
		}
	}
	return errors.Join(errs...)
}

// PlannedRun is one run of a sweep.
type PlannedRun struct {
	// Name is the run directory's name: <method>[-<ablation tag>]-s<seed>.
	Name    string
	Variant Variant
	Seed    int64
}

// dirName is <method>[-<ablation tag>]-s<seed>.
func (p PlannedRun) dirName() string {
	name := p.Variant.Method
	if tag := p.Variant.Tag(); tag != "" {
		name += "-" + tag
	}
	return name + "-s" + strconv.FormatInt(p.Seed, 10)
}

// Sets returns the overrides that make the sweep's configuration this
// run's: method, seed, and loss.bi and loss.cyc for bicyc in an ablation.
func (p PlannedRun) Sets(ablation bool) []string {
	s := []string{"method=" + p.Variant.Method, "seed=" + strconv.FormatInt(p.Seed, 10)}
	if ablation && p.Variant.Method == "bicyc" {
		s = append(s, "loss.bi="+strconv.FormatBool(p.Variant.Bi), "loss.cyc="+strconv.FormatBool(p.Variant.Cyc))
	}
	return s
}

// Plan lists the runs of s in the order a sweep runs them: for every seed,
// each method, then, with the ablation on, for every seed the bicyc runs
// with L_bi and/or L_cyc switched off (the full bicyc run is the grid's
// on/on cell and runs once).
func (s Spec) Plan() []PlannedRun {
	var plan []PlannedRun
	add := func(v Variant, seed int64) {
		p := PlannedRun{Variant: v, Seed: seed}
		p.Name = p.dirName()
		for _, q := range plan {
			if q.Name == p.Name {
				return
			}
		}
		plan = append(plan, p)
	}
	for seed := range int64(s.Seeds) {
		for _, m := range s.Methods {
			add(Variant{Method: m, Bi: true, Cyc: true}, seed)
		}
	}
	if s.Ablation {
		for seed := range int64(s.Seeds) {
			for _, v := range []Variant{{"bicyc", true, true}, {"bicyc", false, true}, {"bicyc", true, false}, {"bicyc", false, false}} {
				add(v, seed)
			}
		}
	}
	return plan
}

// Configs returns the resolved configuration of every run of s.Plan(), in
// plan order, built by configure from s.Sets, the run's own sets (see
// PlannedRun.Sets), run_dir = s.Out and run_name = the run's name. A
// configuration that contradicts the plan (another variant, or an
// export.dir that every run would share) is an error wrapping
// ErrInvalidSpec.
func (s Spec) Configs(configure Configure) ([]config.Config, error) {
	plan := s.Plan()
	configs := make([]config.Config, len(plan))
	for i, p := range plan {
		sets := append(slices.Clip(s.Sets), p.Sets(s.Ablation)...)
		sets = append(sets, "run_dir="+s.Out, "run_name="+p.Name)
		cfg, err := configure(sets)
		if err != nil {
			return nil, fmt.Errorf("sweep run %s: %w", p.Name, err)
		}
		if cfg.Export.Dir != "" {
			return nil, fmt.Errorf("sweep run %s: %w: export.dir %q would give every run the same model directory",
				p.Name, ErrInvalidSpec, cfg.Export.Dir)
		}
		if v := VariantOf(cfg); v != p.Variant {
			return nil, fmt.Errorf("sweep run %s: %w: the configuration makes it %s", p.Name, ErrInvalidSpec, v)
		}
		configs[i] = cfg
	}
	return configs, nil
}

// Run statuses in a sweep record.
const (
	StatusPending  = "pending"
	StatusRunning  = "running"
	StatusFinished = "finished"
	StatusStopped  = "stopped"
	StatusFailed   = "failed"
)

// SweepRecord is sweep.json: the definition a sweep ran with and the state
// of each of its runs. It is rewritten atomically after every change, so a
// killed sweep leaves a valid record.
type SweepRecord struct {
	Spec Spec        `json:"spec"`
	Runs []RunRecord `json:"runs"`
}

// RunRecord is one run of a sweep record.
type RunRecord struct {
	Name     string `json:"name"`
	Method   string `json:"method"`
	Seed     int64  `json:"seed"`
	Ablation string `json:"ablation,omitempty"`
	LossBi   bool   `json:"loss_bi"`
	LossCyc  bool   `json:"loss_cyc"`
	// Status is pending, running, finished, stopped (cancelled) or failed.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// WallSeconds adds up the wall-clock time of every session of the run,
	// export included.
	WallSeconds float64 `json:"wall_seconds"`
}

// ReadSweepRecord reads a sweep.json. A missing file gives an error
// wrapping fs.ErrNotExist; a corrupt one an error wrapping ErrInvalidRun.
func ReadSweepRecord(path string) (*SweepRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rec SweepRecord
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrInvalidRun, err)
	}
	for i, r := range rec.Runs {
		if r.Name == "" || r.Name != filepath.Base(r.Name) || r.Name == "." || r.Name == ".." {
			return nil, fmt.Errorf("%s: %w: run %d has name %q, not a directory name", path, ErrInvalidRun, i, r.Name)
		}
	}
	return &rec, nil
}

// Configure builds the resolved configuration of a run from --set style
// overrides applied on top of the sweep's config file. The command line
// supplies it, so that a sweep reads configs exactly as `bicyc train` does.
type Configure func(sets []string) (config.Config, error)

// SweepOptions are the settings of RunSweep that are not part of the
// definition.
type SweepOptions struct {
	// Train is passed to every run (log and progress writers).
	Train train.Options
	// Status receives one line per run as the sweep reaches it; nil means
	// none.
	Status io.Writer
	// Report is the report written at the end; see Options.
	Report Options
}

// RunSweep runs the plan of spec in spec.Out, one run at a time. A
// finished run (metrics.json with completed_tasks == tasks) is skipped, a
// started one resumed with train.Resume, so a sweep can be stopped at any
// point (cancel ctx) and run again. A run whose directory holds a
// different configuration stops the sweep with ErrConfigChanged before it
// trains anything. A failing run is recorded and the sweep goes on; the
// failures come back joined at the end. Unless cancelled, RunSweep then
// writes the report of the runs that finished (see Generate); the record
// is returned in every case.
//
// Runs of one seed share their first task: a new run whose configuration
// differs from an earlier run's only in keys that act after task 1 (method,
// ablation switches; train.LaterTaskKeys) starts from that run's task-1
// checkpoint (train.Fork), which gives the metrics a run from scratch would.
// Its WallSeconds then leave task 1 out; its metrics keep task 1's times.
//
// Every run exports its model directory to <run>/model when its
// configuration enables export, as `bicyc train` does.
func RunSweep(ctx context.Context, spec Spec, configure Configure, opts SweepOptions) (*SweepRecord, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	status := opts.Status
	if status == nil {
		status = io.Discard
	}
	plan := spec.Plan()
	configs, err := spec.Configs(configure)
	if err != nil {
		return nil, err
	}
	for i, p := range plan {
		if err := sameConfig(filepath.Join(spec.Out, p.Name), configs[i]); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(spec.Out, 0o755); err != nil {
		return nil, err
	}
	rec := newSweepRecord(spec, plan)
	save := func() error { return writeJSONAtomic(filepath.Join(spec.Out, sweepFile), rec) }
	if err := save(); err != nil {
		return rec, err
	}
	var failures []error
	for i, p := range plan {
		r := &rec.Runs[i]
		dir := filepath.Join(spec.Out, p.Name)
		state, done, err := runState(dir)
		if err != nil {
			return rec, err
		}
		var from string
		if state != StatusFinished && done == 0 {
			from = firstTaskSource(spec.Out, plan[:i], configs[:i], configs[i])
		}
		announceRun(status, fmt.Sprintf("sweep [%d/%d] %s", i+1, len(plan), p.Name), state, done, from)
		if state != StatusFinished {
			r.Status, r.Error = StatusRunning, ""
			if err := save(); err != nil {
				return rec, err
			}
		}
		start := time.Now()
		err = trainRun(ctx, dir, configs[i], state, from, opts.Train)
		// A skipped run's wall time stays what training it took (0 for a
		// run trained elsewhere and adopted, see runTotals).
		if state != StatusFinished {
			r.WallSeconds += time.Since(start).Seconds()
		}
		switch {
		case err == nil:
			r.Status = StatusFinished
		case ctx.Err() != nil:
			r.Status = StatusStopped
		default:
			r.Status, r.Error = StatusFailed, err.Error()
			failures = append(failures, fmt.Errorf("sweep run %s: %w", p.Name, err))
		}
		if serr := save(); serr != nil {
			return rec, serr
		}
		if ctx.Err() != nil {
			return rec, fmt.Errorf("sweep stopped at run %s (run the sweep again to resume): %w", p.Name, ctx.Err())
		}
	}
	if _, err := Generate(spec.Out, opts.Report); err != nil {
		failures = append(failures, fmt.Errorf("report: %w", err))
	}
	return rec, errors.Join(failures...)
}

// announceRun writes the status line of a run about to be reached: prefix,
// then whether it is skipped, resumed after done tasks or starts from the
// first task of the run in from.
func announceRun(status io.Writer, prefix, state string, done int, from string) {
	switch {
	case state == StatusFinished:
		fmt.Fprintf(status, "%s: finished, skipped\n", prefix)
	case done > 0:
		fmt.Fprintf(status, "%s: resuming after task %d\n", prefix, done)
	case from != "":
		fmt.Fprintf(status, "%s: task 1 from %s\n", prefix, filepath.Base(from))
	default:
		fmt.Fprintf(status, "%s\n", prefix)
	}
}

// newSweepRecord starts the record of plan, keeping the wall time of runs
// that an earlier session of the sweep recorded.
func newSweepRecord(spec Spec, plan []PlannedRun) *SweepRecord {
	old := map[string]float64{}
	if prev, err := ReadSweepRecord(filepath.Join(spec.Out, sweepFile)); err == nil {
		for _, r := range prev.Runs {
			old[r.Name] = r.WallSeconds
		}
	}
	rec := &SweepRecord{Spec: spec}
	rec.Spec.Config, rec.Spec.Out = workingRelative(spec.Config), workingRelative(spec.Out)
	for _, p := range plan {
		rec.Runs = append(rec.Runs, RunRecord{
			Name: p.Name, Method: p.Variant.Method, Seed: p.Seed, Ablation: p.Variant.Tag(),
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

// runState tells how far the run in dir got: pending (no run yet),
// started (with done completed tasks) or finished.
func runState(dir string) (state string, done int, err error) {
	if _, err := os.Stat(filepath.Join(dir, "config.yaml")); errors.Is(err, fs.ErrNotExist) {
		return StatusPending, 0, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "metrics.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return StatusRunning, 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	var s struct {
		Completed int `json:"completed_tasks"`
		Tasks     int `json:"tasks"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return "", 0, fmt.Errorf("%s: %w: %w", filepath.Join(dir, "metrics.json"), ErrInvalidRun, err)
	}
	if s.Tasks > 0 && s.Completed == s.Tasks {
		return StatusFinished, s.Completed, nil
	}
	return StatusRunning, s.Completed, nil
}

// firstTaskSource returns the directory of an earlier run of the plan whose
// first task the run with configuration cfg can share (train.Fork): one
// whose configuration differs only in train.LaterTaskKeys (the same seed,
// another method or ablation cell) and whose task 1 is complete; "" when
// there is none.
func firstTaskSource(out string, earlier []PlannedRun, configs []config.Config, cfg config.Config) string {
	for j, p := range earlier {
		dir := filepath.Join(out, p.Name)
		if len(train.FirstTaskDifferences(configs[j], cfg)) == 0 && train.HasFirstTask(dir) {
			return dir
		}
	}
	return ""
}

// trainRun brings the run in dir to its end from the given state, then
// exports its model directory if the configuration asks for it and it is
// not there yet. A pending run starts from the first task of the run in
// from when that is not empty.
func trainRun(ctx context.Context, dir string, cfg config.Config, state, from string, opts train.Options) error {
	if state != StatusFinished {
		var run *train.Run
		var err error
		switch {
		case state == StatusPending && from != "":
			run, err = train.Fork(from, cfg, dir, opts)
		case state == StatusPending:
			run, err = train.New(cfg, dir, opts)
		default:
			run, err = train.Resume(dir, opts)
		}
		if err != nil {
			return err
		}
		err = run.Execute(ctx)
		if cerr := run.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if !cfg.Export.Enabled {
		return nil
	}
	model := filepath.Join(dir, "model")
	if _, err := os.Stat(model); err == nil {
		return nil
	}
	if err := train.Export(dir, model); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// sameConfig returns an error wrapping ErrConfigChanged, naming the keys
// that differ, when dir holds a run whose config.yaml is not cfg; nil when
// it holds none.
func sameConfig(dir string, cfg config.Config) error {
	path := filepath.Join(dir, "config.yaml")
	var have config.Config
	err := readConfig(path, &have)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	diff := configDiff(have, cfg)
	if len(diff) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w: %s (choose another sweep output directory, or delete the run)",
		path, ErrConfigChanged, strings.Join(diff, "; "))
}

// configDiff lists the keys whose values differ between a and b, as
// "key: a -> b", in declaration order. run_dir and threads do not count:
// where the sweep directory is reached from and how many cores train it do
// not change the experiment.
func configDiff(a, b config.Config) []string {
	a.RunDir, b.RunDir = "", ""
	a.Threads, b.Threads = 0, 0
	var out []string
	for _, c := range config.Diff(a, b) {
		out = append(out, c.String())
	}
	return out
}

// writeJSONAtomic writes v as indented JSON to path through a temporary
// file and a rename, so readers never see half a file.
func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return durable.WriteFile(path, append(b, '\n'))
}
