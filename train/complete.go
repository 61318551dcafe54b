package train

import (
	"context"
	"fmt"
	"os"

	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/rundir"
)

// Complete brings the run in dir to its end and exports it as bicyc train
// does (ExportAfterTraining), from wherever its records say it stopped
// (rundir.ReadProgress): a directory without a run is created for cfg,
// from the run in from when from is not "" (all of its completed tasks
// with Rescore when rescore, its first task with Fork otherwise), else
// with New; a started run resumes. A finished run does not train again; it
// is exported only when export is enabled and its model directory is
// missing (a sweep killed between training and export). It is the
// sweep.Trainer that bicyc sweep runs cells with.
func Complete(ctx context.Context, dir string, cfg config.Config, from string, rescore bool, opts Options) error {
	p, err := rundir.ReadProgress(dir)
	if err != nil {
		return err
	}
	if p.Finished() {
		model := ModelDir(cfg, dir)
		if _, err := os.Stat(model); !cfg.Export.Enabled || err == nil {
			return nil
		}
		if err := Export(dir, model, 0); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		return nil
	}
	var run *Run
	switch {
	case !p.Started && from != "" && rescore:
		run, err = Rescore(from, cfg, dir, opts)
	case !p.Started && from != "":
		run, err = Fork(from, cfg, dir, opts)
	case !p.Started:
		run, err = New(cfg, dir, opts)
	default:
		run, err = Resume(dir, opts)
	}
	if err != nil {
		return err
	}
	err = run.Execute(ctx)
	if err == nil {
		_, err = ExportAfterTraining(run)
	}
	if cerr := run.Close(); err == nil {
		err = cerr
	}
	return err
}
