package ops

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// threads is the number of goroutines the ops split their loops over; 0 means runtime.GOMAXPROCS(0).
var threads atomic.Int64

// SetThreads sets how many goroutines the ops use for their parallel loops. n <= 0 restores the default,
// runtime.GOMAXPROCS(0) read at each call. It does not change the threads of the BLAS library: OpenBLAS reads
// OPENBLAS_NUM_THREADS. SetThreads is safe for concurrent use; running ops pick the new value up at their next
// parallel loop.
func SetThreads(n int) {
	if n < 0 {
		n = 0
	}
	threads.Store(int64(n))
}

// Threads returns the number of goroutines the ops currently use for their parallel loops.
func Threads() int {
	if n := int(threads.Load()); n > 0 {
		return n
	}
	return runtime.GOMAXPROCS(0)
}

// parallelFor calls body over [0, n) split into contiguous chunks, one per goroutine, and waits for all of
// them. Loops with less than minWork units per goroutine use fewer goroutines, because starting a goroutine costs
// about a microsecond.
func parallelFor(n, minWork int, body func(lo, hi int)) {
	workers := Threads()
	if minWork < 1 {
		minWork = 1
	}
	if most := n / minWork; workers > most {
		workers = most
	}
	parallelRanges(n, workers, func(_, lo, hi int) { body(lo, hi) })
}

// parallelRanges splits [0, n) into at most workers contiguous ranges of ceil(n/workers) units, calls
// body(w, lo, hi) for each on its own goroutine, w numbering the ranges from 0 in order, and waits for all of
// them. The split depends only on n and workers, so that results accumulated per range are reproducible.
func parallelRanges(n, workers int, body func(w, lo, hi int)) {
	if workers <= 1 {
		if n > 0 {
			body(0, 0, n)
		}
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo, w := chunk, 1; lo < n; lo, w = lo+chunk, w+1 {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(w, lo, hi)
		}()
	}
	body(0, 0, min(chunk, n))
	wg.Wait()
}
