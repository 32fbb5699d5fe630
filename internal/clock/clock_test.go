package clock

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/timing"
)

// A Waiter never returns before the due time, gives up at once when done
// is already closed, and gives up during a wait when done closes.
func TestWaiter(t *testing.T) {
	w := NewWaiter(nil)
	defer w.Close()
	for _, d := range []time.Duration{-time.Millisecond, 0, 50 * time.Microsecond, 2 * time.Millisecond, 60 * time.Millisecond} {
		due := time.Now().Add(d)
		if !w.Until(due) {
			t.Fatalf("%v: gave up with done open", d)
		}
		if now := time.Now(); now.Before(due) {
			t.Errorf("%v: returned %v early", d, due.Sub(now))
		}
	}
	done := make(chan struct{})
	close(done)
	if WaitUntil(done, time.Now().Add(time.Hour)) {
		t.Error("waited with done closed")
	}

	done = make(chan struct{})
	cw := NewWaiter(done)
	defer cw.Close()
	go func() { time.Sleep(20 * time.Millisecond); close(done) }()
	t0 := time.Now()
	if cw.Until(time.Now().Add(time.Hour)) {
		t.Error("an hour's wait returned true")
	}
	if took := time.Since(t0); took > 2*time.Second {
		t.Errorf("gave up %v after done closed, want promptly", took)
	}
	if cw.Until(time.Now().Add(time.Millisecond)) {
		t.Error("waited again after done closed")
	}
}

// The reason the Waiter parks in the netpoller: with one processor, a
// goroutine that waits for a due time must leave it to the others. Here one
// goroutine waits 1 ms at a time, back to back, while another is woken by a
// kernel timer through the netpoller, as a reader of a socket is. A wait
// that held the processor (a nanosleep, a yielding spin) would leave that
// wake-up to the runtime's 10 ms background poll. Timing-dependent: the
// bound is 5 ms p99, and each attempt's figures are logged.
func TestWaiterLeavesTheProcessor(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	timing.Retry(t, 3, func(attempt int) []string {
		stop := make(chan struct{})
		go func() {
			w := NewWaiter(stop)
			defer w.Close()
			for w.Until(time.Now().Add(time.Millisecond)) {
			}
		}()
		// A reader of a timer that another waiter arms: woken by the
		// netpoller, as a socket's reader is.
		r := NewWaiter(nil)
		var late []time.Duration
		for range 200 {
			due := time.Now().Add(300 * time.Microsecond)
			r.Until(due)
			late = append(late, time.Since(due))
		}
		r.Close()
		close(stop)
		slices.Sort(late)
		p99 := late[len(late)*99/100]
		t.Logf("attempt %d: wake-up lateness p50 %v, p99 %v, max %v", attempt, late[len(late)/2], p99, late[len(late)-1])
		if p99 >= 5*time.Millisecond {
			return []string{fmt.Sprintf("a second waiter's wake-ups were held up: p99 lateness %v (want < 5ms)", p99)}
		}
		return nil
	})
}
