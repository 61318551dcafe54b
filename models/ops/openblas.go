//go:build cgo

package ops

// #cgo LDFLAGS: -lopenblas
// void openblas_set_num_threads(int num_threads);
import "C"

import (
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// UseOpenBLAS registers OpenBLAS (through gonum's netlib bindings) as gorgonia's BLAS and makes the BLAS
// calls of this package parallel in Go instead of inside OpenBLAS: OpenBLAS is set to one thread, and every
// large matrix product of these ops is split into one block per goroutine (see SetThreads).
//
// Why: after each multi-threaded call, OpenBLAS's idle worker threads spin in sched_yield for a while; on a
// 2-core machine that spinning took about 40% of the cycles of a training step and starved the parallel loops
// of the other ops. Matrix products of stock gorgonia ops (G.Mul) run on one thread afterwards.
//
// Call it once at program start, before building or running graphs. It is idempotent and not safe to call
// while a graph runs.
func UseOpenBLAS() {
	G.Use(netlib.Implementation{})
	setOpenBLASThreads(1)
}

// setOpenBLASThreads sets OpenBLAS's thread count; gemm splits its products across goroutines only while
// OpenBLAS runs on one thread.
func setOpenBLASThreads(n int) {
	C.openblas_set_num_threads(C.int(n))
	splitGemm.Store(n == 1)
}
