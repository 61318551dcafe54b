// Package vector holds the SIMD assembly kernels of package models/ops, in a package of their own because a
// Go package that uses cgo (models/ops links OpenBLAS) cannot contain Go assembly.
//
// The kernels need AVX2 and FMA (HasAVX2) and take float32 slices whose lengths are multiples of 8 (4 for
// GELU); callers keep a portable Go version of each computation for other processors and for the ends of
// slices. Results may differ from the Go versions by rounding: the kernels fuse multiply-adds and sum in
// eight lanes. The kernels read and
// write only the slices they are given and are safe for concurrent use on disjoint slices.
package vector
