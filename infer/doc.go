// Package infer classifies images with an exported bicyc model bundle
// through ONNX Runtime. It is the public API that Go services import: the
// runtime alone. It never links the training engine (gorgonia) nor the
// ONNX writer (package export and its protobuf types); writing new
// versions of a model (new classes, a calibration) is package author.
//
// # Lifecycle
//
//  1. Open(ctx, dir, options...) verifies the bundle's manifest and checksums
//     (package bundle), loads the ONNX Runtime library once per process
//     (InitRuntime), picks an execution provider (ProviderAuto tries
//     TensorRT, then CUDA, then the CPU) and creates one ONNX Runtime
//     session per model file: model.onnx for Classify, backbone.onnx for
//     Embed, adapter.onnx for Transport (absent in a bundle of one task).
//  2. Classify, ClassifyBatch, ClassifyInputs, ClassifyFile,
//     ClassifyReader, Scores, Embed, EmbedInputs and Transport reuse those
//     sessions. A Classifier is safe for concurrent use by any number of
//     goroutines; ONNX Runtime runs concurrent calls in parallel.
//  3. Close releases the sessions. It is idempotent and safe on the nil
//     Classifier a failed Open returns; calls after Close return ErrClosed.
//     The ONNX Runtime environment itself lives until the process exits,
//     shared by every Classifier.
//
// # Images
//
// Images are decoded by package imaging (imaging.DecodeImageContext, the
// decoder training's image folders use too): PNG, JPEG, GIF, BMP, TIFF and
// WebP in any colour model, refusing from the header alone images larger
// than WithMaxPixels (decompression bombs) and JPEGs over its scan budget
// (scan bombs), reading at most imaging.MaxImageBytes. A JPEG comes back
// upright by its EXIF Orientation tag, so a phone's portrait photo, stored
// sideways, is classified as it is seen. DecodePrepare is the one path
// from encoded bytes to a model input (decode, Prepare, ReleaseImage),
// used by bicyc-infer's classify and by serve; ClassifyRuns splits a batch
// into runs of at most RunBatch images, and LimitMemory sets the process's
// memory limit. The decoded image goes through the bundle's
// preprocessing, imaging.Preprocess.Image: the same function training used for its
// test-time input, so the two cannot disagree. Its resize mode comes from
// the manifest: center-crop resizes the shorter side and crops the centre
// (a photo of any aspect ratio is cropped, not squashed); squash, or no mode
// in manifests that predate it, resizes the whole image. Network inputs are
// float32 NCHW. Prepare reduces an image to its Input, small whatever the
// image's size; a caller batching many large images keeps Inputs, not
// images, and classifies them with ClassifyInputs.
//
// # Scores
//
// The model scores an image against every class prototype with the squared
// Mahalanobis distance of its feature (docs/method.md, "Classifier"), or with
// the classifier head the manifest names (softmax, alone or mixed with the
// distance: gauss.ClassifierOptions.Head, GaussianWeight); smaller is
// closer. A Result lists the top-k classes, closest first, ties broken by
// class index.
//
// A model calibrated on held-out images (bundle.Calibration, the formulas in
// gauss.Calibration) also gives each prediction a Probability, the Result a
// Confidence, an UnknownScore and Unknown: true for images unlike every
// known class, at a threshold that accepts a stated share of known-class
// images (WithAcceptRate, default the manifest's, normally 95 %; or
// WithUnknownThreshold). The score is the manifest's (classifier.unknown_score)
// or the one WithUnknownScore names (gauss.UnknownScores: vim, mahalanobis,
// energy, ...), each with its own held-out threshold; UnknownScores gives
// every score of an image, to compare them. Collector keeps unknown images for labelling;
// package author adds classes from a few labelled images each, without
// retraining, and calibrates a model that has no calibration.
//
// # Context, errors, logging
//
// Every call that runs the model takes a context.Context. Once it is done,
// a call stops between images while it preprocesses them and inside ONNX
// Runtime (each cancellable run has its own run options, whose terminate
// flag the context sets; ONNX Runtime checks it before every node), and
// returns an error wrapping ctx.Err(); the Classifier stays usable. Open
// returns when its context is done even while sessions are still being
// created, and releases them once ONNX Runtime hands them over.
//
// Errors from outside data (images, bundle files, options) are returned,
// never panics, and wrap sentinels where callers must branch (an image's
// data imaging.ErrFormat, imaging.ErrUnsupported or imaging.ErrTooLarge):
// ErrNotRegular, ErrNilImage, ErrInputShape, ErrInvalidOptions, ErrProviderUnavailable,
// ErrRuntimeNotFound, ErrRuntimeTooOld, ErrRuntimeConflict, ErrNoAdapter,
// ErrClosed, ErrNotCalibrated, ErrCollectionFull.
//
// The package writes nothing to stderr or anywhere else unless the caller
// passes a writer with WithLog.
//
// May import: bundle, imaging and the ground floor; never gorgonia, export, data, models, train (TestForbiddenImports).
package infer
