package main

import (
	"os"
	"runtime/debug"
	"strconv"
)

// generatorGOGC is the load generator's garbage-collection target (GOGC)
// unless the environment sets one. With Go's default of 100 its own
// collections distorted what it measured: small REST at 13,400 calls/s
// over 1024 workers against a warm server, 5 s after a 1 s warm-up, gave
// p99 128-512 ms from the intended start in four fresh runs, nearly all of
// it calls started late by the generator, and a longer warm-up did not
// help (10 s: 178 ms). With GOGC 400 the same run gave p99 15 ms, as did
// GOGC off (16 ms): the collector, run every few milliseconds over a small
// heap, took the cores the dispatcher needed. The cost is memory: the
// generator's heap may grow to five times its live data (tens of MB).
const generatorGOGC = 400

// tuneGeneratorGC sets the load generator's GOGC (generatorGOGC, or the
// environment's) and returns it, for results.Env. Only run and capacity
// call it: the server, its own `serve` process, keeps Go's defaults, as a
// service would.
func tuneGeneratorGC() int {
	if v, ok := os.LookupEnv("GOGC"); ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
		if v == "off" {
			return -1
		}
		return 100 // the runtime ignores a value it cannot parse
	}
	debug.SetGCPercent(generatorGOGC)
	return generatorGOGC
}
