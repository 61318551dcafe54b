package train

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/export"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/rundir"
	"gonum.org/v1/gonum/mat"
)

// Export writes the model directory of the run in runDir, as of its last
// completed task, to outDir (see package export): backbone, adapter,
// classifier and fused ONNX models plus the prototype bundle. The manifest's
// metrics are those of that checkpoint. With a validation split it also
// reads the training data, to calibrate confidence and "unknown" on the
// held-out images (see calibration); without one it needs only the run
// directory.
//
// An export in place (outDir inside runDir, or the run's own model
// directory, ModelDir: <run>/model or export.dir) holds the run's lock
// (rundir.Lock; another writer is waited for up to wait, else an error
// names it). One elsewhere only reads the run and writes nothing into it,
// so a read-only run exports.
func Export(runDir, outDir string, wait time.Duration) error {
	own, err := DefaultModelDir(runDir)
	if err != nil {
		return err
	}
	if inside(runDir, outDir) || inside(own, outDir) {
		l, _, err := rundir.Lock(runDir, wait, os.Stderr)
		if err != nil {
			return fmt.Errorf("export %s: %w", runDir, err)
		}
		defer l.Release()
	}
	return exportRun(runDir, outDir, nil)
}

// inside reports whether path is dir or lies within it (an export into
// the run's model directory or a folder of it is in place too).
func inside(dir, path string) bool {
	d, err1 := filepath.Abs(dir)
	p, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return true // cannot tell: lock, the safe side
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// exportRun is Export; live, when not nil, is the run in runDir as it stands
// after its last checkpoint, whose data calibration then uses instead of
// loading them again.
func exportRun(runDir, outDir string, live *Run) error {
	cfg, err := config.ReadRun(filepath.Join(runDir, rundir.ConfigFile))
	if err != nil {
		return fmt.Errorf("export %s: %w", runDir, err)
	}
	rec, err := rundir.ReadStream(runDir)
	if err != nil {
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
	in, clf, err := exportInput(cfg, rec, st, metrics)
	if err != nil {
		return fmt.Errorf("export %s: %w", runDir, err)
	}
	protos := storedGaussians(in.Means, in.Covariances, in.FeatureDim)
	if in.Calibration, err = calibration(runDir, cfg, in.Classes, protos, clf, live); err != nil {
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
	cfg, err := config.ReadRun(filepath.Join(runDir, rundir.ConfigFile))
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
	// The run has just trained: its data are loaded and its state is the
	// last checkpoint's.
	if err := exportRun(r.Dir(), dir, r); err != nil {
		return "", fmt.Errorf("export: %w", err)
	}
	return dir, nil
}

// calibration fits the exported model's calibration (export.FitCalibration)
// on the run's validation split: the backbone's features of the held-out
// training images of every exported class, which training never saw. A run
// without a validation split (data.val_per_class 0), or with fewer than
// gauss.MinCalibrationImages such images, exports no calibration: its
// model then never answers "unknown" unless given a threshold. r is the
// run with its data loaded, or nil to resume it from runDir.
func calibration(runDir string, cfg config.Config, classes []bundle.Class, protos []gauss.Gaussian, clf *gauss.Classifier, r *Run) (*bundle.Calibration, error) {
	if cfg.Data.ValPerClass == 0 {
		return nil, nil
	}
	if r == nil {
		var err error
		if r, err = Open(runDir, Options{Log: io.Discard}); err != nil {
			return nil, err
		}
		defer r.Close()
	}
	ids := make([]int, len(classes))
	for i, c := range classes {
		ids[i] = c.ID
	}
	idx := calibrationSample(r.valIndices(ids), len(classes), cfg.Seed)
	if len(idx) < gauss.MinCalibrationImages {
		return nil, nil
	}
	flip := cfg.Classifier.TestFlip
	z, err := features(r.state.Backbone, r.train, idx, r.prep, r.cfg.Train.EvalBatch, flip)
	if err != nil {
		return nil, fmt.Errorf("calibration features: %w", err)
	}
	n, k, s := len(idx), clf.Classes(), clf.Dim()
	var scores []float32
	if flip {
		all := clf.Scores(z, 2*n)
		scores = gauss.MeanScores(all[:n*k], all[n*k:])
		z = gauss.MeanScores(z[:n*s], z[n*s:]) // the feature a reader averages too
	} else {
		scores = clf.Scores(z, n)
	}
	labels := make([]int, len(idx))
	for i, j := range idx {
		labels[i] = r.train.Labels[j]
	}
	return export.FitCalibration(clf, cfg.Classifier, classes, protos, scores, z, labels, cfg.Export.AcceptRate)
}

// calibrationSample is idx reduced to the held-out images a calibration
// over k classes takes (gauss.CalibrationSample, drawn with the run's
// seed), in idx's order.
func calibrationSample(idx []int, k int, seed int64) []int {
	keep := gauss.CalibrationSample(len(idx), k, uint64(seed))
	if len(keep) == len(idx) {
		return idx
	}
	out := make([]int, len(keep))
	for i, p := range keep {
		out[i] = idx[p]
	}
	return out
}

// storedGaussians are the class Gaussians as the bundle stores them
// (float32 means and covariances, [K,S] and [K,S,S]), so that the held-out
// quantiles of the feature scores are those a reader computes.
func storedGaussians(means, covs []float32, s int) []gauss.Gaussian {
	k := len(means) / s
	out := make([]gauss.Gaussian, k)
	for c := range k {
		mean := make([]float64, s)
		for i := range s {
			mean[i] = float64(means[c*s+i])
		}
		cov := mat.NewSymDense(s, nil)
		for a := range s {
			for b := a; b < s; b++ {
				cov.SetSym(a, b, float64(covs[(c*s+a)*s+b]))
			}
		}
		out[c] = gauss.Gaussian{Mean: mean, Cov: cov}
	}
	return out
}

// exportInput assembles the export of state st: every class seen in the
// completed tasks, in task order, with its prototype and classifier tables,
// and returns the classifier the tables come from.
func exportInput(cfg config.Config, rec rundir.Stream, st *State, metrics json.RawMessage) (export.Input, *gauss.Classifier, error) {
	var classes []bundle.Class
	var protos []gauss.Gaussian
	var priors []float64
	for t := 0; t < st.Completed; t++ {
		for _, c := range rec.Tasks[t] {
			p, ok := st.Prototypes[c]
			if !ok {
				return export.Input{}, nil, fmt.Errorf("no prototype for class %d", c)
			}
			name := ""
			if c < len(rec.ClassNames) {
				// Folder names need not be UTF-8; the manifest is JSON.
				name = strings.ToValidUTF8(rec.ClassNames[c], "\uFFFD")
			}
			classes = append(classes, bundle.Class{ID: c, Name: name, Task: t + 1, Age: st.Completed - 1 - t})
			protos = append(protos, p)
			priors = append(priors, float64(st.ClassCounts[c]))
		}
	}
	opts := cfg.Classifier
	clf, err := gauss.NewClassifier(protos, priors, opts.WithAges(bundle.Ages(classes)))
	if err != nil {
		return export.Input{}, nil, err
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
		return export.Input{}, nil, err
	}
	in := export.Input{
		Arch: cfg.Model.Backbone, FeatureDim: s, Backbone: st.Backbone.State(),
		Means: means, Covariances: covs, Tables: clf.Tables(),
		Classifier: opts,
		Classes:    classes, Tasks: rec.Tasks[:st.Completed], Preprocess: preprocessFor(cfg),
		Config: cfgJSON, Metrics: metrics,
	}
	if st.Adapter != nil {
		in.AdapterKind, in.Adapter = st.Adapter.Kind(), st.Adapter.State()
	}
	return in, clf, nil
}

// preprocessFor is the test-time preprocessing of a configuration: its
// image geometry, resize mode (written out even for squash, so every
// manifest states it) and normalisation (the dataset's standard values when
// the config gives none).
func preprocessFor(cfg config.Config) data.Preprocess {
	d := cfg.Data
	mean, std := toFloat32(d.Mean), toFloat32(d.Std)
	if len(mean) == 0 {
		mean, std = data.DefaultNormalization(d.Kind)
	}
	p := data.Preprocess{Channels: d.Channels, Height: d.Height, Width: d.Width, Mean: mean, Std: std,
		Resize: data.ResizeCatmullRom, ResizeMode: d.ResizeMode}
	if d.ResizeMode == arch.CenterCrop {
		p.ResizeShorter = data.CenterCropResize(max(d.Height, d.Width), d.CenterCropRatio)
	}
	return p
}

// loadSide is the shorter side at which image-folder training images are
// kept for random-resized crops (data.load_size, by default the test-time
// resize size), or 0 when they need not be kept.
func loadSide(cfg config.Config, p data.Preprocess) int {
	d := cfg.Data
	if !d.RandomResizedCrop || d.Kind != data.KindImageFolder {
		return 0
	}
	if d.LoadSize > 0 {
		return d.LoadSize
	}
	return max(p.ResizeShorter, d.Height, d.Width)
}
