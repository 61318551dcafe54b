// Package safetensors reads and writes float32 tensors in the safetensors
// format (https://huggingface.co/docs/safetensors), so that Python tools can
// open bicyc's checkpoints and prototype bundles without bicyc.
//
// A file is an 8-byte little-endian header length, a JSON header that maps
// every tensor name to its dtype, shape and byte offsets (plus an optional
// "__metadata__" map of strings), and then the raw little-endian data.
// Only the F32 dtype is written; F32 and F64 are read (F64 is narrowed).
//
// May import: durable.
package safetensors
