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

// parallelEach runs units 0..n-1 on up to workers goroutines, the caller's among them, and returns when every
// unit is done. The goroutines claim the units one at a time in increasing order, so one that starts late or
// is interrupted takes fewer: the loop ends within about one unit of the work's even share, where a static
// split waits for its slowest range. For loops whose every unit writes its own results, which do not depend on
// the goroutine that computes them; loops whose partial results accumulate per range keep parallelRanges'
// fixed split. A goroutine calls start once, at its first unit, for its unit function and its end (scratch
// taken and given back per goroutine); a goroutine that finds no unit left neither starts nor is waited for,
// and end may run after parallelEach has returned.
func parallelEach(n, workers int, start func() (unit func(i int), end func())) {
	workers = min(workers, n)
	if workers <= 1 {
		if n > 0 {
			unit, end := start()
			for i := range n {
				unit(i)
			}
			end()
		}
		return
	}
	var next atomic.Int64
	var done sync.WaitGroup
	done.Add(n)
	run := func() {
		i := int(next.Add(1) - 1)
		if i >= n {
			return
		}
		unit, end := start()
		for ; i < n; i = int(next.Add(1) - 1) {
			unit(i)
			done.Done()
		}
		end()
	}
	for range workers - 1 {
		go run()
	}
	run()
	done.Wait()
}

// parallelUnits is parallelEach for units that need no scratch of their own goroutine.
func parallelUnits(n, workers int, unit func(i int)) {
	parallelEach(n, workers, func() (func(int), func()) { return unit, func() {} })
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
