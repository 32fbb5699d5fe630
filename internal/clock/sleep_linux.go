package clock

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const sleepName = "nanosleep (timer slack 1 ns)"

// preciseSleep sleeps d with a raw nanosleep system call, after setting
// this OS thread's timer slack to 1 ns (the default 50 µs is added to
// every sleep; see WaitUntil's costs): it blocks the goroutine's thread
// and wakes about 50 µs late, where a Go timer wakes about 0.6 ms late.
// It is set before every sleep (one cheap system call), as the goroutine
// may sleep on another thread each time; it stays set on the thread,
// where the runtime's own timed waits end on time too.
func preciseSleep(d time.Duration) {
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
