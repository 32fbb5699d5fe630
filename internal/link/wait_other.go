//go:build !linux

package link

import "time"

// preciseSleep is time.Sleep where no raw nanosleep is wired up.
func preciseSleep(d time.Duration) { time.Sleep(d) }
