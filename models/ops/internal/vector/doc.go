// Package vector holds the SIMD assembly kernels of package models/ops, in a package of their own because a
// Go package that uses cgo (models/ops links OpenBLAS) cannot contain Go assembly.
//
// Each kernel has a Has* variable that reports whether the processor runs it; callers keep a portable Go
// version of the same computation for the other processors and for the ends of slices. The kernels read and
// write only the slices they are given and are safe for concurrent use on disjoint slices.
package vector
