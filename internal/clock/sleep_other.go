//go:build !linux

package clock

import "time"

const sleepName = "time.Sleep"

// preciseSleep is time.Sleep where no raw nanosleep is wired up.
func preciseSleep(d time.Duration) { time.Sleep(d) }
