//go:build race

package engine

// raceDetector is true under -race, which slows the load generator (and a
// server in this process) several times over: tests that check timing or
// throughput against physics skip then; they run in the plain test run.
const raceDetector = true
