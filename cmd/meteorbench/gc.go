package main

import (
	"os"
	"runtime/debug"
	"strconv"

	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
)

// tuneGeneratorGC sets the load generator's GOGC (plan.GeneratorGOGC,
// or the environment's) and returns it, for results.Env. Only run and capacity
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
	debug.SetGCPercent(plan.GeneratorGOGC)
	return plan.GeneratorGOGC
}
