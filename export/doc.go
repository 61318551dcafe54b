// Package export turns a trained bicyc model into ONNX files and a model
// directory (package bundle) that inference, ONNX Runtime or TensorRT can
// load without bicyc's training code.
//
// Every file is an ONNX model of IR version 8 and opset 17 with a symbolic
// batch dimension "N" on each input and output, built only from operators
// TensorRT supports (Conv, Gemm, Relu, MaxPool, GlobalAveragePool, Erf, Mul,
// Add, Div, Reshape, ReduceSum, ReduceL2, Max); BatchNorm is folded
// into the convolutions. Models are marshalled deterministically, so the
// same weights give the same bytes.
//
//	backbone.onnx    image [N,C,H,W] (NCHW, normalised) -> features [N,S]
//	adapter.onnx     features_old [N,S] -> features [N,S]
//	classifier.onnx  features [N,S] -> scores [N,K]
//	model.onnx       image [N,C,H,W] -> scores [N,K]
//
// (tensor names: bundle.TensorImage and the other bundle.Tensor*
// constants). Scores are distances: the smallest score is the predicted
// class (docs/method.md, "Classifier"). The graphs do not rank them: the
// reader does, once (package infer, ties by class index). Tensor names of state dicts are a contract with
// package models (see Backbone and Adapter). Bad weights (missing,
// misshapen, NaN) return errors wrapping ErrState, bad classifier tables
// classgraph.ErrTables; the functions keep no state and are safe for
// concurrent use.
//
// Write is a pure writer of typed input (Input): the class Gaussians and
// their priors, from which it builds the classifier and the stored
// prototypes once, and the held-out images' backbone features (HeldOut),
// on which it fits the calibration with bundle.FitCalibration, the fit
// package author refits with. It never trains or runs a network.
//
// The graphs are built with package onnxgraph; the classifier's graph is
// package classgraph's, the one builder that package author uses too when
// it adds classes to a model directory.
//
// May import: bundle, gauss, imaging, safetensors, export/onnxgraph, export/classgraph; never train (a pure writer).
package export
