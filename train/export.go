package train

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/export"
	"github.com/bicyc/bicyc/gauss"
)

// Export writes the model directory of the run in runDir, as of its last
// completed task, to outDir (see package export): backbone, adapter,
// classifier and fused ONNX models plus the prototype bundle. It needs only
// the run directory, not the training data. The manifest's metrics are
// those of that checkpoint.
func Export(runDir, outDir string) error {
	cfg, err := config.ReadRun(filepath.Join(runDir, "config.yaml"))
	if err != nil {
		return fmt.Errorf("export %s: %w", runDir, err)
	}
	var rec streamRecord
	if err := readJSON(filepath.Join(runDir, "stream.json"), &rec); err != nil {
		return fmt.Errorf("export %s: %w", runDir, err)
	}
	st, err := loadLatestCheckpoint(runDir, cfg)
	if err != nil {
		return err
	}
	if st == nil || st.Completed == 0 {
		return fmt.Errorf("export %s: the run has no completed task yet", runDir)
	}
	// The metrics come from the checkpoint, not metrics.json, which a kill
	// between the two writes can leave one task behind.
	s, err := summarize(cfg, rec.Tasks, st)
	if err != nil {
		return fmt.Errorf("export %s: %w", runDir, err)
	}
	metrics, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("export %s: %w", runDir, err)
	}
	in, err := exportInput(cfg, rec, st, metrics)
	if err != nil {
		return fmt.Errorf("export %s: %w", runDir, err)
	}
	return export.Write(outDir, in)
}

// ModelDir is the model directory a run in runDir configured by cfg exports
// to: export.dir (relative to the working directory, as every path of a
// configuration), or <runDir>/model when that is empty.
func ModelDir(cfg config.Config, runDir string) string {
	if cfg.Export.Dir != "" {
		return cfg.Export.Dir
	}
	return filepath.Join(runDir, "model")
}

// DefaultModelDir is ModelDir of the run in runDir, read from its
// config.yaml: where `bicyc export` writes without --out.
func DefaultModelDir(runDir string) (string, error) {
	cfg, err := config.ReadRun(filepath.Join(runDir, "config.yaml"))
	if err != nil {
		return "", fmt.Errorf("export %s: %w", runDir, err)
	}
	return ModelDir(cfg, runDir), nil
}

// ExportAfterTraining is the one rule for exporting after training, which
// bicyc train, bicyc learn and bicyc sweep all follow: when the run's
// configuration enables export (export.enabled) and the run has completed a
// task, it exports the run to ModelDir and returns that directory; otherwise
// it returns "" and writes nothing.
func ExportAfterTraining(r *Run) (string, error) {
	cfg := r.Config()
	if !cfg.Export.Enabled || r.State().Completed == 0 {
		return "", nil
	}
	dir := ModelDir(cfg, r.Dir())
	if err := Export(r.Dir(), dir); err != nil {
		return "", fmt.Errorf("export: %w", err)
	}
	return dir, nil
}

// exportInput assembles the export of state st: every class seen in the
// completed tasks, in task order, with its prototype and classifier tables.
func exportInput(cfg config.Config, rec streamRecord, st *State, metrics json.RawMessage) (export.Input, error) {
	var classes []bundle.Class
	var protos []gauss.Gaussian
	var priors []float64
	for t := 0; t < st.Completed; t++ {
		for _, c := range rec.Tasks[t] {
			p, ok := st.Prototypes[c]
			if !ok {
				return export.Input{}, fmt.Errorf("no prototype for class %d", c)
			}
			name := ""
			if c < len(rec.ClassNames) {
				// Folder names need not be UTF-8; the manifest is JSON.
				name = strings.ToValidUTF8(rec.ClassNames[c], "\uFFFD")
			}
			classes = append(classes, bundle.Class{ID: c, Name: name, Task: t + 1})
			protos = append(protos, p)
			priors = append(priors, float64(st.ClassCounts[c]))
		}
	}
	opts := gauss.ClassifierOptions{Shrink: cfg.Classifier.Shrink, Normalize: cfg.Classifier.Normalize, FullGaussian: cfg.Classifier.FullGaussian}
	clf, err := gauss.NewClassifier(protos, priors, opts)
	if err != nil {
		return export.Input{}, err
	}
	s := cfg.Model.FeatureDim
	means := make([]float32, 0, len(protos)*s)
	covs := make([]float32, 0, len(protos)*s*s)
	for _, p := range protos {
		for _, v := range p.Mean {
			means = append(means, float32(v))
		}
		for a := 0; a < s; a++ {
			for b := 0; b < s; b++ {
				covs = append(covs, float32(p.Cov.At(a, b)))
			}
		}
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return export.Input{}, err
	}
	in := export.Input{
		Arch: cfg.Model.Backbone, FeatureDim: s, Backbone: st.Backbone.State(),
		Means: means, Covariances: covs, Tables: clf.Tables(),
		Classifier: bundle.ClassifierOptions{Normalize: opts.Normalize, Shrink: opts.Shrink, FullGaussian: opts.FullGaussian, TopK: cfg.Classifier.TopK},
		Classes:    classes, Tasks: rec.Tasks[:st.Completed], Preprocess: preprocessFor(cfg),
		Config: cfgJSON, Metrics: metrics,
	}
	if st.Adapter != nil {
		in.AdapterKind, in.Adapter = st.Adapter.Kind(), st.Adapter.State()
	}
	return in, nil
}

// preprocessFor is the test-time preprocessing of a configuration: its
// image geometry and normalisation (the dataset's standard values when the
// config gives none).
func preprocessFor(cfg config.Config) data.Preprocess {
	d := cfg.Data
	mean, std := toFloat32(d.Mean), toFloat32(d.Std)
	if len(mean) == 0 {
		mean, std = data.DefaultNormalization(d.Kind)
	}
	return data.Preprocess{Channels: d.Channels, Height: d.Height, Width: d.Width, Mean: mean, Std: std, Resize: data.ResizeCatmullRom}
}
