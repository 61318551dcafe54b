package sweep

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/durable"
)

// CellsDir is the directory of a sweep that holds, per cell, its frozen
// configuration (<name>.yaml), its last outcome (<name>.json) and, while a
// worker runs it, its lock (<name>.lock).
const CellsDir = "cells"

// LogsDir is the directory of a sweep where schedulers write each cell's
// output (logs/cell-<index>.log).
const LogsDir = "logs"

// Cell is one run of a sweep as a unit of work that any worker can run:
// its index in the plan (the index `bicyc sweep --cell` takes, the Slurm
// array index), the run, and the earlier cell it starts from.
type Cell struct {
	Index int
	Run   PlannedRun
	// WaitsFor is the index of the cell whose run this one starts from, -1
	// for none: a cell that differs from an earlier one only in classifier.*
	// keys takes that run's tasks and evaluates them again (Rescore true,
	// train.Rescore); one that differs only in keys acting after task 1 takes
	// its first task (train.Fork). Either waits until that cell has
	// finished, which is when the one-process sweep would reach it.
	WaitsFor int
	Rescore  bool
	// Wave is 0 for a cell that waits for none, else 1 + its WaitsFor's:
	// the cells of a wave can all run at once once the earlier waves are
	// done (a Slurm array, a Kubernetes Indexed Job).
	Wave int
}

// Plan is a sweep's cells with their resolved configurations, in the
// order the one-process sweep runs them (Spec.Plan).
type Plan struct {
	Spec    Spec
	Cells   []Cell
	Configs []config.Config
}

// NewPlan resolves the configuration of every run of spec (Spec.Configs)
// and finds what each cell waits for: the first earlier cell it can be
// rescored from, else the first it can fork task 1 from.
func NewPlan(spec Spec, configure Configure) (*Plan, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	configs, err := spec.Configs(configure)
	if err != nil {
		return nil, err
	}
	return planOf(spec, configs), nil
}

// planOf links the runs of spec, configured by configs, into cells.
func planOf(spec Spec, configs []config.Config) *Plan {
	runs := spec.Plan()
	p := &Plan{Spec: spec, Configs: configs, Cells: make([]Cell, len(runs))}
	for i, r := range runs {
		c := Cell{Index: i, Run: r, WaitsFor: -1}
		for j := range i {
			if len(config.RescoreDifferences(configs[j], configs[i])) == 0 {
				c.WaitsFor, c.Rescore = j, true
				break
			}
			if c.WaitsFor < 0 && len(config.FirstTaskDifferences(configs[j], configs[i])) == 0 {
				c.WaitsFor = j
			}
		}
		if c.WaitsFor >= 0 {
			c.Wave = p.Cells[c.WaitsFor].Wave + 1
		}
		p.Cells[i] = c
	}
	return p
}

// Dir is the run directory of cell i.
func (p *Plan) Dir(i int) string { return filepath.Join(p.Spec.Out, p.Cells[i].Run.Name) }

// Waves returns the cell indices of each wave, in plan order.
func (p *Plan) Waves() [][]int {
	var waves [][]int
	for _, c := range p.Cells {
		for len(waves) <= c.Wave {
			waves = append(waves, nil)
		}
		waves[c.Wave] = append(waves[c.Wave], c.Index)
	}
	return waves
}

// Cell returns the cell of index i, or an error naming the plan's range.
func (p *Plan) Cell(i int) (Cell, error) {
	if i < 0 || i >= len(p.Cells) {
		return Cell{}, fmt.Errorf("sweep %s: no cell %d: the plan has cells 0-%d", p.Spec.Out, i, len(p.Cells)-1)
	}
	return p.Cells[i], nil
}

// Format lists the plan as `bicyc sweep --plan` prints it: one line per
// cell with its index, wave, run directory and the cell it waits for.
func (p *Plan) Format() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-5s %-4s %-40s %s\n", "cell", "wave", "run directory", "waits for")
	for _, c := range p.Cells {
		wait := "-"
		if c.WaitsFor >= 0 {
			how := "task 1 (fork)"
			if c.Rescore {
				how = "its tasks (rescore)"
			}
			wait = fmt.Sprintf("cell %d %s: %s", c.WaitsFor, p.Cells[c.WaitsFor].Run.Name, how)
		}
		fmt.Fprintf(&b, "%-5d %-4d %-40s %s\n", c.Index, c.Wave, p.Dir(c.Index), wait)
	}
	return b.String()
}

// Write freezes the plan into its sweep directory, so that workers on
// other machines run exactly these configurations without the config file
// or the environment that resolved them: sweep.json (the record, each
// run's state as the directory shows it now) and cells/<name>.yaml, every
// run's resolved configuration. A run directory that already holds a
// different configuration is an error wrapping ErrConfigChanged, before
// anything is written.
func (p *Plan) Write() error {
	for i := range p.Cells {
		if err := sameConfig(p.Dir(i), p.Configs[i]); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(p.Spec.Out, CellsDir), 0o755); err != nil {
		return err
	}
	for i, c := range p.Cells {
		b, err := p.Configs[i].YAML()
		if err != nil {
			return err
		}
		if err := durable.WriteFile(cellFile(p.Spec.Out, c.Run.Name, ".yaml"), b); err != nil {
			return err
		}
	}
	rec := newRecord(p.Spec, p.Spec.Plan())
	for i := range rec.Runs {
		c := p.Cells[i]
		if c.WaitsFor >= 0 {
			rec.Runs[i].WaitsFor = p.Cells[c.WaitsFor].Run.Name
			rec.Runs[i].Rescore = c.Rescore
		}
	}
	if err := overlayStates(p.Spec.Out, rec); err != nil {
		return err
	}
	return durable.WriteJSON(filepath.Join(p.Spec.Out, RecordFile), rec)
}

// ReadPlan reads the plan a sweep directory was frozen with (Plan.Write):
// the spec and run list of sweep.json and every cell's configuration.
// A directory without sweep.json gives an error wrapping fs.ErrNotExist.
func ReadPlan(out string) (*Plan, error) {
	rec, err := ReadRecord(filepath.Join(out, RecordFile))
	if err != nil {
		return nil, err
	}
	spec := rec.Spec
	spec.Out = out
	runs := spec.Plan()
	if len(runs) != len(rec.Runs) {
		return nil, fmt.Errorf("%s: %w: %d runs, but its spec plans %d", filepath.Join(out, RecordFile), ErrInvalidRecord, len(rec.Runs), len(runs))
	}
	configs := make([]config.Config, len(runs))
	for i, r := range runs {
		if rec.Runs[i].Name != r.Name {
			return nil, fmt.Errorf("%s: %w: run %d is %s, its spec plans %s", filepath.Join(out, RecordFile), ErrInvalidRecord, i, rec.Runs[i].Name, r.Name)
		}
		path := cellFile(out, r.Name, ".yaml")
		cfg, err := config.ReadRun(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: the sweep's plan was not written here (run bicyc sweep --plan or --submit first): %w", path, err)
		}
		if err != nil {
			return nil, err
		}
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		cfg.RunDir = out
		configs[i] = cfg
	}
	return planOf(spec, configs), nil
}

// cellFile is the file of the named cell in the sweep directory out with
// the given extension.
func cellFile(out, name, ext string) string { return filepath.Join(out, CellsDir, name+ext) }

// CellLog is where a scheduler writes cell i's output, relative to the
// sweep directory.
func CellLog(i int) string { return filepath.Join(LogsDir, fmt.Sprintf("cell-%d.log", i)) }
