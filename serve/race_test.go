//go:build race

package serve

import "time"

// Under the race detector, Go code runs several times slower: the load
// test's requests wait longer for a slot, and fewer are served.
const (
	loadQueueTimeout = 45 * time.Second
	loadMinRequests  = 20
)

// raceEnabled: the race detector's instrumentation allocates more, so
// tests that measure allocation skip.
const raceEnabled = true
