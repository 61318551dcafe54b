package train

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/config"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/export"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/rundir"

	"github.com/bicyc/bicyc/imaging"
)

// Export writes the model directory of the run in runDir, as of its last
// completed task, to outDir (see package export): backbone, adapter,
// classifier and fused ONNX models plus the prototype bundle. The manifest's
// metrics are those of that checkpoint, and its calibration of confidence
// and "unknown" is fitted on the held-out features the checkpoint stores
// (exportHeldOut): it reads only the run directory, never the training
// data, and runs no network.
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

// exportRun is Export. It reads the checkpoint's files as stored and
// builds no network; fallback, when not nil, are the held-out features of
// a checkpoint written before checkpoints stored them (ExportAfterTraining
// computes them from the run it has loaded).
func exportRun(runDir, outDir string, fallback *heldOut) error {
	cfg, err := config.ReadRun(filepath.Join(runDir, rundir.ConfigFile))
	if err != nil {
		return fmt.Errorf("export %s: %w", runDir, err)
	}
	// The calibration's linear algebra (gonum) on the BLAS as training
	// sets it up (OpenBLAS, on one thread: its rounding depends on both),
	// so that an export gives the same bytes in any process.
	useCPU(cfg.Threads)
	rec, err := rundir.ReadStream(runDir)
	if err != nil {
		return fmt.Errorf("export %s: %w", runDir, err)
	}
	dir, err := latestCheckpoint(runDir)
	if err != nil {
		return err
	}
	var ck *checkpointFiles
	if dir != "" {
		if ck, err = readCheckpoint(dir, cfg.Model.FeatureDim); err != nil {
			return err
		}
	}
	if ck == nil || ck.state.Completed == 0 {
		return fmt.Errorf("export %s: the run has no completed task yet", runDir)
	}
	// The metrics come from the checkpoint, not metrics.json, which a kill
	// between the two writes can leave one task behind.
	s, err := summarize(cfg, rec.Tasks, &State{Completed: ck.state.Completed, Reports: ck.state.Reports})
	if err != nil {
		return fmt.Errorf("export %s: %w", runDir, err)
	}
	metrics, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("export %s: %w", runDir, err)
	}
	in, err := exportInput(cfg, rec, ck, metrics)
	if err != nil {
		return fmt.Errorf("export %s: %w", runDir, err)
	}
	if ck.heldOut == nil {
		ck.heldOut = fallback
	}
	if in.HeldOut, err = exportHeldOut(runDir, cfg, ck); err != nil {
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
	// The run has just trained (or was resumed after its last task): its
	// state is the last checkpoint's, whose held-out features it computes
	// when that checkpoint was written before checkpoints stored them.
	h := r.state.heldOut
	if h == nil {
		var err error
		if h, err = r.heldOutFeatures(r.state); err != nil {
			return "", fmt.Errorf("export: %w", err)
		}
	}
	if err := exportRun(r.Dir(), dir, h); err != nil {
		return "", fmt.Errorf("export: %w", err)
	}
	return dir, nil
}

// exportHeldOut is what calibrates the export of checkpoint ck
// (export.HeldOut): the held-out features it holds (Run.heldOutFeatures).
// A run without a validation split (data.val_per_class 0), or with fewer
// than gauss.MinCalibrationImages such images, exports no calibration: its
// model then never answers "unknown" unless given a threshold. A
// checkpoint without them (written before checkpoints held them) is an
// error naming the way out.
func exportHeldOut(runDir string, cfg config.Config, ck *checkpointFiles) (*export.HeldOut, error) {
	if cfg.Data.ValPerClass == 0 {
		return nil, nil
	}
	h := ck.heldOut
	if h == nil {
		return nil, fmt.Errorf("checkpoint %s has no %s, the held-out features its calibration is fitted on (it was written before checkpoints held them): `bicyc train --resume %s` exports the run from its data (with export.enabled)",
			ck.dir, heldOutFile, runDir)
	}
	if h.mirrored != cfg.Classifier.TestFlip {
		return nil, fmt.Errorf("checkpoint %s: %s holds the held-out features with test_flip %t, the run's classifier.test_flip is %t: evaluate the run again under its classifier options (train.Rescore, as bicyc sweep does for a classifier variant), which stores them anew",
			ck.dir, heldOutFile, h.mirrored, cfg.Classifier.TestFlip)
	}
	if len(h.classIDs) < gauss.MinCalibrationImages {
		return nil, nil
	}
	return &export.HeldOut{Features: h.features, ClassIDs: h.classIDs, AcceptRate: cfg.Export.AcceptRate}, nil
}

// heldOutFeatures returns the held-out features a calibration of st's
// classes, those of its completed tasks, is fitted on: the backbone's
// features of the run's validation images of those classes, which training
// never saw (of more than gauss.MaxCalibrationPairs/K, calibrationSample's
// share), with classifier.test_flip those of their mirrors after them. It
// returns nil for a run without a validation split.
func (r *Run) heldOutFeatures(st *State) (*heldOut, error) {
	if r.cfg.Data.ValPerClass == 0 {
		return nil, nil
	}
	ids := slices.Concat(r.stream.Tasks[:st.Completed]...)
	idx := calibrationSample(r.valIndices(ids), len(ids), r.cfg.Seed)
	flip := r.cfg.Classifier.TestFlip
	z, err := features(st.Backbone, r.train, idx, r.prep, r.cfg.Train.EvalBatch, flip)
	if err != nil {
		return nil, fmt.Errorf("held-out features: %w", err)
	}
	h := &heldOut{features: z, classIDs: make([]int, len(idx)), mirrored: flip}
	for i, j := range idx {
		h.classIDs[i] = r.train.Labels[j]
	}
	return h, nil
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

// exportInput assembles the export of checkpoint ck: every class seen in
// the completed tasks, in task order, with its prototype and prior (its
// count of training images), and the networks' weights as stored.
func exportInput(cfg config.Config, rec rundir.Stream, ck *checkpointFiles, metrics json.RawMessage) (export.Input, error) {
	completed := ck.state.Completed
	var classes []bundle.Class
	var protos []gauss.Gaussian
	var priors []float64
	for t := 0; t < completed; t++ {
		for _, c := range rec.Tasks[t] {
			p, ok := ck.prototypes[c]
			if !ok {
				return export.Input{}, fmt.Errorf("no prototype for class %d", c)
			}
			name := ""
			if c < len(rec.ClassNames) {
				// Folder names need not be UTF-8; the manifest is JSON.
				name = strings.ToValidUTF8(rec.ClassNames[c], "\uFFFD")
			}
			classes = append(classes, bundle.Class{ID: c, Name: name, Task: t + 1, Age: completed - 1 - t})
			protos = append(protos, p)
			priors = append(priors, float64(ck.classCounts[c]))
		}
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return export.Input{}, err
	}
	in := export.Input{
		Arch: cfg.Model.Backbone, FeatureDim: cfg.Model.FeatureDim, Backbone: ck.backbone,
		AdapterKind: ck.state.AdapterKind, Adapter: ck.adapter,
		Prototypes: protos, Priors: priors, Classifier: cfg.Classifier,
		Classes: classes, Tasks: rec.Tasks[:completed], Preprocess: preprocessFor(cfg),
		Config: cfgJSON, Metrics: metrics,
	}
	return in, nil
}

// preprocessFor is the test-time preprocessing of a configuration: its
// image geometry, resize mode (written out even for squash, so every
// manifest states it) and normalisation (the dataset's standard values when
// the config gives none).
func preprocessFor(cfg config.Config) imaging.Preprocess {
	d := cfg.Data
	mean, std := toFloat32(d.Mean), toFloat32(d.Std)
	if len(mean) == 0 {
		mean, std = data.DefaultNormalization(d.Kind)
	}
	p := imaging.Preprocess{Channels: d.Channels, Height: d.Height, Width: d.Width, Mean: mean, Std: std,
		Resize: imaging.ResizeCatmullRom, ResizeMode: d.ResizeMode}
	if d.ResizeMode == arch.CenterCrop {
		p.ResizeShorter = imaging.CenterCropResize(max(d.Height, d.Width), d.CenterCropRatio)
	}
	return p
}

// loadSide is the shorter side at which image-folder training images are
// kept for random-resized crops (data.load_size, by default the test-time
// resize size), or 0 when they need not be kept.
func loadSide(cfg config.Config, p imaging.Preprocess) int {
	d := cfg.Data
	if !d.RandomResizedCrop || d.Kind != data.KindImageFolder {
		return 0
	}
	if d.LoadSize > 0 {
		return d.LoadSize
	}
	return max(p.ResizeShorter, d.Height, d.Width)
}
