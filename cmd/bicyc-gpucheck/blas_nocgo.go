//go:build !cgo

package main

import (
	"fmt"
	"runtime"
)

// useBLAS names the BLAS of a binary built without cgo: gonum's pure-Go one, several times slower than
// the OpenBLAS bicyc trains with.
func useBLAS() string {
	return fmt.Sprintf("gonum pure Go (CGO_ENABLED=0 build, %s)", runtime.Version())
}
