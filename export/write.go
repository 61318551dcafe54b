package export

import (
	"encoding/json"
	"fmt"
	"maps"
	"runtime/debug"
	"time"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/data"
	"github.com/bicyc/bicyc/export/classgraph"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/safetensors"
)

// Input is everything Write needs from a finished training run, as plain
// data so that export does not depend on the trainer. Class c of Means,
// Covariances, Tables and the ONNX scores is Classes[c]. Write does not
// modify or keep any slice.
type Input struct {
	// Arch is arch.ConvNet, arch.ResNet18 or arch.ResNet18ImageNet; Backbone its state dict (see
	// Backbone for the tensor names). The image geometry comes from
	// Preprocess (Channels, Height, Width).
	Arch       arch.Backbone
	FeatureDim int
	Backbone   []safetensors.Tensor

	// AdapterKind (arch.MLP, arch.Linear) and Adapter, the last task's
	// old-to-new map; Adapter is nil after the first task, and then no
	// adapter.onnx is written.
	AdapterKind arch.Mapper
	Adapter     []safetensors.Tensor

	// Means [K,S] and Covariances [K,S,S] (full, row-major) are the raw
	// Gaussian prototypes; Tables are gauss.Classifier.Tables() built from
	// them with the options in Classifier.
	Means, Covariances []float32
	Tables             gauss.ClassifierTables
	Classifier         gauss.ClassifierOptions // TopK 0 means gauss.DefaultTopK

	Classes    []bundle.Class
	Tasks      [][]int
	Preprocess data.Preprocess
	// Calibration, fitted on held-out images of Classes (gauss.FitCalibration
	// on the classifier's scores), goes into the manifest; nil for a run
	// without held-out images, whose model then never answers "unknown".
	Calibration *bundle.Calibration

	// Config and Metrics are stored verbatim in the manifest.
	Config, Metrics json.RawMessage

	// Version is the bicyc version recorded in the manifest; empty means
	// the main module's version from the build info.
	Version string
	// CreatedAt is the manifest's creation time; zero means now.
	CreatedAt time.Time
}

// Write exports in as a complete model directory at dir (see package
// bundle): backbone.onnx, adapter.onnx (when in.Adapter is set),
// classifier.onnx and model.onnx with their shared class table
// classifier.data (classgraph.Files), shortlist.onnx when the classifier
// options give the classes a shortlist, prototypes.safetensors and
// manifest.json.
// The directory is replaced atomically (bundle.Write); nothing is written
// when any part fails to build. Errors about the weights wrap ErrState.
func Write(dir string, in Input) error {
	files, m, err := build(in)
	if err != nil {
		return fmt.Errorf("export %s: %w", dir, err)
	}
	if err := bundle.Write(dir, m, files); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// build makes every file and the manifest in memory.
func build(in Input) (map[string][]byte, *bundle.Manifest, error) {
	if err := in.Preprocess.Validate(); err != nil {
		return nil, nil, err
	}
	k := len(in.Classes)
	if in.Tables.K != k || in.Tables.S != in.FeatureDim {
		return nil, nil, fmt.Errorf("%w: classifier tables are for K=%d, S=%d, the model has %d classes of dim %d",
			ErrState, in.Tables.K, in.Tables.S, k, in.FeatureDim)
	}
	if in.Tables.Normalize != in.Classifier.Normalize {
		return nil, nil, fmt.Errorf("%w: classifier tables have normalize=%v, the options say %v",
			ErrState, in.Tables.Normalize, in.Classifier.Normalize)
	}
	opts := in.Classifier
	if err := opts.Validate(); err != nil {
		return nil, nil, err
	}
	opts.TopK = gauss.ResolveTopK(k, opts.TopK)
	if in.Calibration == nil {
		// Without held-out quantiles only the nearest distance is known.
		opts.UnknownScore = ""
	}

	shape := BackboneShape{Arch: in.Arch, InChannels: in.Preprocess.Channels,
		Height: in.Preprocess.Height, Width: in.Preprocess.Width, FeatureDim: in.FeatureDim}
	files := map[string][]byte{}
	var err error
	if files[bundle.BackboneFile], err = Backbone(shape, in.Backbone); err != nil {
		return nil, nil, err
	}
	adapterKind := ""
	if in.Adapter != nil {
		adapterKind = string(in.AdapterKind)
		if files[bundle.AdapterFile], err = Adapter(in.AdapterKind, in.FeatureDim, in.Adapter); err != nil {
			return nil, nil, err
		}
	}
	if len(in.Covariances) != k*in.FeatureDim*in.FeatureDim {
		return nil, nil, fmt.Errorf("%w: %d covariance values for %d classes of dim %d", ErrState, len(in.Covariances), k, in.FeatureDim)
	}
	protos := bundle.Prototypes{K: k, S: in.FeatureDim, Means: in.Means,
		Covariances: bundle.PackCovariances(in.Covariances, k, in.FeatureDim), Bias: in.Tables.Bias, Normalize: in.Tables.Normalize}
	if files[bundle.PrototypesFile], err = protos.Encode(); err != nil {
		return nil, nil, err
	}
	shortlist, classifier, err := classgraph.ModelFiles(in.Tables, protos.Gaussians(), files[bundle.BackboneFile], opts.ShortlistSize(k))
	if err != nil {
		return nil, nil, err
	}
	maps.Copy(files, classifier)

	created := in.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	m := &bundle.Manifest{
		BicycVersion:      version(in.Version),
		CreatedAt:         created.UTC(),
		MinRuntimeVersion: bundle.MinRuntimeVersion,
		Backbone:          string(in.Arch),
		FeatureDim:        in.FeatureDim,
		Adapter:           adapterKind,
		Classifier:        opts,
		Preprocess:        in.Preprocess,
		Classes:           in.Classes,
		Tasks:             in.Tasks,
		Calibration:       in.Calibration,
		Shortlist:         shortlist,
		ModelFeatures:     true,
		Config:            in.Config,
		Metrics:           in.Metrics,
	}
	return files, m, nil
}

// version returns v, or the main module's version when v is empty
// ("(devel)" for a build from a work tree).
func version(v string) string {
	if v != "" {
		return v
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
