// Package onnxgraph builds the ONNX graphs bicyc writes: a Graph collects
// inputs, initializers (float32 as little-endian raw data, or as external
// data in a file beside the model) and nodes with readable unique names,
// and Marshal encodes the model deterministically (the same weights give
// the same bytes, so the same SHA-256 in a manifest). Every graph is IR
// IRVersion, opset OpsetVersion, which Debian's onnx checker and ONNX
// Runtime >= 1.24 read. Its types are export/onnxpb, generated from ONNX's
// onnx.proto.
//
// Misuse by the programmer (a value name used twice, an input that does
// not exist yet, an initializer whose shape and data disagree) panics
// with an "onnxgraph: " message: the graphs are built from code, never
// from outside data.
//
// May import: export/onnxpb.
package onnxgraph
