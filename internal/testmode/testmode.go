// Package testmode is how a test of a package CI runs under the race
// detector says that it runs reduced there: under -short (the race step's
// flag) or the race detector it skips, does less, or checks a looser bound.
//
// CI runs those packages' tests twice over between two steps, not twice
// each: the race step runs them all with -race -short, and the normal step
// then runs only the tests that were skipped or reduced in it (.ci/run
// reads them from the race step's log: a skip, or a line with Marker). A
// test that ran in full under the race detector is not run again. So every
// reduction must go through this package (Short, SkipShort, UnderRace,
// Reduced), never testing.Short() or a race constant of its own: .ci/run
// refuses those in the race detector's packages, since a test reduced
// without a word would then never run in full.
package testmode

import "testing"

// Race is true in a test binary built with -race.
const Race = race

// Marker starts every line Reduced logs.
const Marker = "testmode: reduced:"

// Reduced logs that t runs reduced here, and why: CI's normal step runs
// it again, in full.
func Reduced(t testing.TB, why string) {
	t.Helper()
	t.Log(Marker + " " + why)
}

// Short reports whether the tests run with -short, logging why t runs
// reduced when they do.
func Short(t testing.TB, why string) bool {
	t.Helper()
	if testing.Short() {
		Reduced(t, "-short: "+why)
	}
	return testing.Short()
}

// SkipShort skips t under -short, saying why.
func SkipShort(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: " + why)
	}
}

// UnderRace reports Race, logging why t runs reduced when it is true.
func UnderRace(t testing.TB, why string) bool {
	t.Helper()
	if Race {
		Reduced(t, "race detector: "+why)
	}
	return Race
}
