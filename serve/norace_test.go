//go:build !race

package serve

import "time"

// The load test's queue timeout and the fewest requests it must serve.
const (
	loadQueueTimeout = 10 * time.Second
	loadMinRequests  = 100
)

// raceEnabled says whether the race detector instruments the tests.
const raceEnabled = false
