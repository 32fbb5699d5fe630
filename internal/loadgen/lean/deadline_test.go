package lean_test

import (
	"context"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/lean"
	"github.com/meteorbench/meteorbench/internal/loadgen/loadgentest"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
)

// TestDeadlines: a lean caller keeps a call's deadline without a context
// per call (call.DeadlineCaller). Against a server that stalls its 2nd and
// 3rd calls, the 2nd ends as a timeout soon after its deadline, the 3rd as
// cancelled when the context it runs under is cancelled, and the 4th, on
// the same caller, succeeds: neither end leaves the caller broken.
func TestDeadlines(t *testing.T) {
	for _, p := range api.DefaultProtocols() {
		t.Run(string(p), func(t *testing.T) {
			srv := loadgentest.Start(t, loadgentest.Config{Hook: func(ctx context.Context, n int64) {
				if n == 2 || n == 3 {
					<-ctx.Done() // the client gave up, or the test ended
				}
			}})
			c, a := loadgentest.Open(t, lean.New, p, call.Options{Target: srv.Addr, Workers: 1, Dialer: &wire.Dialer{}}, api.Small)
			defer c.Close()
			dc := a.(call.DeadlineCaller)
			phase, cancel := context.WithCancel(context.Background())
			defer cancel()
			if _, err := dc.CallBy(phase, time.Now().Add(5*time.Second)); err != nil {
				t.Fatalf("call 1: %v", err)
			}

			const timeout = 100 * time.Millisecond
			start := time.Now()
			_, err := dc.CallBy(phase, start.Add(timeout))
			took := time.Since(start)
			if cl := call.Classify(phase, err); cl != results.ClassTimeout {
				t.Errorf("call 2, stalled past its deadline: class %q (%v), want timeout", cl, err)
			}
			// The watchdog looks every WatchEvery; a second of slack for a busy machine.
			if took < timeout || took > timeout+lean.WatchEvery+time.Second {
				t.Errorf("call 2 ended after %v, want %v to %v", took, timeout, timeout+lean.WatchEvery+time.Second)
			}

			time.AfterFunc(100*time.Millisecond, cancel)
			start = time.Now()
			_, err = dc.CallBy(phase, start.Add(time.Minute))
			if cl := call.Classify(phase, err); cl != results.ClassCancelled {
				t.Errorf("call 3, its context cancelled: class %q (%v), want cancelled", cl, err)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("call 3 ended %v after it started: the cancel did not end it", took)
			}

			if _, err := dc.CallBy(context.Background(), time.Now().Add(5*time.Second)); err != nil {
				t.Errorf("call 4, after a timeout and a cancel: %v", err)
			}
		})
	}
}
