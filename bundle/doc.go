// Package bundle is the one definition of bicyc's model directory: what
// export writes and infer reads.
//
//	manifest.json           Manifest (schema_version 1): classes, task stream,
//	                        feature dim, architecture, classifier options,
//	                        preprocessing, calibration (optional), training
//	                        config and metrics, and
//	                        the size and SHA-256 of every other file
//	backbone.onnx           image [N,C,H,W] (NCHW, normalised) -> features [N,S]
//	adapter.onnx            features_old [N,S] -> features [N,S] (tasks > 1 only)
//	classifier.onnx         features [N,S] -> scores [N,K]
//	model.onnx              image -> scores (backbone and classifier fused)
//	classifier.data         the classifier's [K,D] table, raw float32, which
//	                        both graphs read as ONNX external data (schema
//	                        version 5 on; before, each graph held a copy)
//	prototypes.safetensors  Prototypes: Gaussian means [K,S], packed
//	                        covariances [K,S(S+1)/2] and the classifier's
//	                        bias [K] (before schema version 5: full
//	                        covariances and the factored tables, still read)
//	manifest.sha256         the SHA-256 of manifest.json (DigestFile), so the
//	                        manifest is verified too; absent in directories
//	                        written before it existed, which still open
//
// The tensor names (TensorImage, TensorFeatures, ...) are constants of this
// package; models written before them also had top-k outputs, which
// readers ignore.
//
// FitCalibration is the one fit of a model's Calibration (export and
// package author both call it), and NewOpenSet the one rule for the
// background of its unknown scores, which infer uses too.
//
// Write replaces a directory only once the new one is complete and synced,
// so an interrupted export never leaves a half-written model that looks
// valid and never destroys the previous one. Open verifies the manifest
// against its digest and every file against the manifest before anything
// is used, reading only regular files and each within its known size; its
// errors name the file
// and wrap ErrSchemaVersion, ErrMissingFile, ErrChecksum, ErrManifest or
// ErrPrototypes.
//
// May import: imaging and the ground floor (gauss, names, bounded, durable, safetensors); never gorgonia, data, export.
package bundle
