//go:build race

package server_test

// raceEnabled: under the race detector every goroutine runs several times
// slower and allocates more, so more attack work is in flight at once; the
// HTTP/2 attack tests allow twice the heap growth.
const raceEnabled = true
