// Package vector holds the SIMD assembly kernels of package models/ops, in a package of their own because a
// Go package that uses cgo (models/ops links OpenBLAS) cannot contain Go assembly.
//
// The kernels need AVX2 and FMA (HasAVX2) and take float32 slices whose lengths are multiples of 8 (4 for
// GELU); callers keep a portable Go version of each computation for other processors and for the ends of
// slices. Where the processor has AVX-512 F (HasAVX512, capped at AVX2 by the environment variable
// LevelEnv), the element-wise kernels and the Winograd transforms that have an AVX-512 version run it, 16
// lanes at a time, and the AVX2 version on the last 8 of a length that is not a multiple of 16; the others
// run their AVX2 version. Results may differ from the Go versions, and between the two widths, by
// rounding: the kernels fuse multiply-adds and sum in eight or sixteen lanes. The kernels read and write
// only the slices they are given and are safe for concurrent use on disjoint slices.
//
// May import: nothing of bicyc.
package vector
