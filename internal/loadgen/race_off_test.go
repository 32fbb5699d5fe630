//go:build !race

package loadgen

// raceDetector: see race_on_test.go.
const raceDetector = false
