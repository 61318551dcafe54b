// Package author writes new versions of a model directory without
// retraining and without keeping images (exemplar-free): AddClasses adds
// classes estimated from a few labelled images each, Calibrate fits the
// classifier's calibration (a confidence and an "unknown" answer) on
// held-out images of its classes, with bundle.FitCalibration, the fit an
// export makes. It is model authoring, apart from the
// runtime: it runs the model through package infer, builds the classifier
// over old and new prototypes with package gauss, writes its ONNX graph
// with package classgraph (the one builder of it, which export uses too) and the
// directory with bundle.Create (atomic, checksummed, never over another
// writer's directory). A service that only
// classifies imports infer and links none of this.
//
// Both take a context.Context: cancelling it stops the embedding or
// scoring of the images between batches and inside ONNX Runtime's runs
// (see infer.Classifier.ClassifyBatch), and nothing is written.
//
// The images come as class folders (ReadClassFolders: one sub-folder per
// class); CheckImages decodes them all first, so a folder is judged whole
// before any work. Errors wrap sentinels where callers must branch:
// ErrClassFolder, ErrTooFewImages, ErrDuplicateClass, ErrModelChanged,
// ErrOutputExists, and imaging's for images (imaging.ErrFormat ...).
//
// May import: infer, repository, bundle, export/classgraph, data (class folders), imaging, gauss, names; never gorgonia.
package author
