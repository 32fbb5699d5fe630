// Package rusage reads this process's CPU time with getrusage(2), which
// counts in microseconds. /proc/self/stat (what Prometheus's process
// collector reads) counts in 10 ms clock ticks: too coarse for per-call CPU.
package rusage

import (
	"runtime"
	"syscall"
	"time"
)

// CPU returns the user plus system CPU time this process has used so far.
// It returns 0 if the kernel refuses, which no supported OS does.
func CPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PeakRSS returns the peak resident set size of this process since it
// started, in bytes (getrusage's maxrss: KiB on Linux, bytes on macOS); 0
// if the kernel refuses.
func PeakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
