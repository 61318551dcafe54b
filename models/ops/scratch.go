package ops

import "sync"

// scratchPool lends work buffers that live only inside one Do call (a convolution's patch matrix for a chunk
// of images, a partial filter gradient), so that all ops of all graphs share them instead of each op keeping
// its own for the life of the graph. A buffer's contents are undefined when lent. Safe for concurrent use.
//
// The pool keeps every returned buffer, but never more buffers than were lent at the same time: when no free
// buffer is large enough, it drops the largest free one before allocating. Its memory is thus bounded by
// the largest simultaneous need (one patch matrix per goroutine), reached in the first training step.
type scratchPool[T float] struct {
	mu   sync.Mutex
	free [][]T
}

var (
	scratch32 scratchPool[float32]
	scratch64 scratchPool[float64]
)

// scratchOf returns the pool of element type T.
func scratchOf[T float]() *scratchPool[T] {
	var zero T
	if _, ok := any(zero).(float32); ok {
		return any(&scratch32).(*scratchPool[T])
	}
	return any(&scratch64).(*scratchPool[T])
}

// get returns a buffer of length n: the smallest free one that is large enough, else a new one.
func (p *scratchPool[T]) get(n int) []T {
	p.mu.Lock()
	defer p.mu.Unlock()
	fit, largest := -1, -1
	for i, b := range p.free {
		if cap(b) >= n && (fit < 0 || cap(b) < cap(p.free[fit])) {
			fit = i
		}
		if largest < 0 || cap(b) > cap(p.free[largest]) {
			largest = i
		}
	}
	if fit < 0 {
		if largest >= 0 {
			p.take(largest)
		}
		return make([]T, n)
	}
	return p.take(fit)[:n]
}

// take removes and returns free buffer i.
func (p *scratchPool[T]) take(i int) []T {
	b := p.free[i]
	last := len(p.free) - 1
	p.free[i] = p.free[last]
	p.free[last] = nil
	p.free = p.free[:last]
	return b
}

// put returns buffers lent by get.
func (p *scratchPool[T]) put(bufs ...[]T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range bufs {
		if b != nil {
			p.free = append(p.free, b)
		}
	}
}
