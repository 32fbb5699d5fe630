package clock

import (
	"testing"
	"time"
)

// WaitUntil never returns before the due time, and gives up at once when
// done is already closed.
func TestWaitUntil(t *testing.T) {
	for _, d := range []time.Duration{-time.Millisecond, 0, 50 * time.Microsecond, 2 * time.Millisecond, 60 * time.Millisecond} {
		due := time.Now().Add(d)
		if !WaitUntil(nil, due) {
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
}
