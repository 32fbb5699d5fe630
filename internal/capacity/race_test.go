//go:build race

package capacity_test

// raceEnabled: the race detector slows the load generator several times
// over, so timing claims (the capacity found) are not checked under it.
const raceEnabled = true
