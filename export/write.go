package export

import (
	"encoding/json"
	"fmt"
	"maps"
	"runtime/debug"
	"time"

	"github.com/bicyc/bicyc/arch"
	"github.com/bicyc/bicyc/bundle"
	"github.com/bicyc/bicyc/export/classgraph"
	"github.com/bicyc/bicyc/gauss"
	"github.com/bicyc/bicyc/imaging"
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

	// Prototypes are the class Gaussians, Prototypes[c] that of
	// Classes[c], and Priors their training image counts (nil: equal
	// priors). Write builds the classifier from them (gauss.NewClassifier
	// with Classifier and the classes' ages) and stores them in float32
	// (bundle.NewPrototypes).
	Prototypes []gauss.Gaussian
	Priors     []float64
	Classifier gauss.ClassifierOptions // TopK 0 means gauss.DefaultTopK

	Classes    []bundle.Class
	Tasks      [][]int
	Preprocess imaging.Preprocess
	// HeldOut, backbone features of held-out images of Classes that the
	// model never trained on, calibrates confidence and "unknown" (see
	// HeldOut); nil for a run without held-out images, whose model then
	// never answers "unknown".
	HeldOut *HeldOut

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
	opts := in.Classifier
	if err := opts.Validate(); err != nil {
		return nil, nil, err
	}
	clf, err := newClassifier(in)
	if err != nil {
		return nil, nil, err
	}
	tables := clf.Tables()
	protos := bundle.NewPrototypes(in.Prototypes, tables.Bias, tables.Normalize)
	opts.TopK = gauss.ResolveTopK(k, opts.TopK)
	var cal *bundle.Calibration
	if in.HeldOut != nil {
		if cal, opts.UnknownScore, err = calibrate(*in.HeldOut, clf, in.Classes, protos, opts); err != nil {
			return nil, nil, err
		}
	} else {
		// Without held-out quantiles only the nearest distance is known.
		opts.UnknownScore = ""
	}

	shape := BackboneShape{Arch: in.Arch, InChannels: in.Preprocess.Channels,
		Height: in.Preprocess.Height, Width: in.Preprocess.Width, FeatureDim: in.FeatureDim}
	files := map[string][]byte{}
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
	if files[bundle.PrototypesFile], err = protos.Encode(); err != nil {
		return nil, nil, err
	}
	shortlist, classifier, err := classgraph.ModelFiles(tables, protos.Gaussians(), files[bundle.BackboneFile], opts.ShortlistSize(k))
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
		Calibration:       cal,
		Shortlist:         shortlist,
		ModelFeatures:     true,
		Config:            in.Config,
		Metrics:           in.Metrics,
	}
	return files, m, nil
}

// newClassifier builds the classifier of in's prototypes, after checking that
// there is one of dimension FeatureDim per class.
func newClassifier(in Input) (*gauss.Classifier, error) {
	if len(in.Classes) == 0 || len(in.Prototypes) != len(in.Classes) || (in.Priors != nil && len(in.Priors) != len(in.Classes)) {
		return nil, fmt.Errorf("%w: %d prototypes and %d priors for %d classes", ErrState, len(in.Prototypes), len(in.Priors), len(in.Classes))
	}
	for c, g := range in.Prototypes {
		if g.Dim() != in.FeatureDim {
			return nil, fmt.Errorf("%w: the prototype of class %d has dimension %d, the model %d", ErrState, in.Classes[c].ID, g.Dim(), in.FeatureDim)
		}
	}
	clf, err := gauss.NewClassifier(in.Prototypes, in.Priors, in.Classifier.WithAges(bundle.Ages(in.Classes)))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrState, err)
	}
	return clf, nil
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
