package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/loadgen/pace"
)

// When every worker is busy, a due tick waits for one; it must not be
// handed out after the soft end (no call starts after it). Here no worker
// ever takes a tick: dispatch must end by itself at the soft end, having
// sent nothing, long before the context's (hard) deadline.
func TestDispatchStopsAtSoftEndWhenWorkersAreBusy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard only
	defer cancel()
	ticks := make(chan time.Time) // nobody receives
	soft := 20 * time.Millisecond
	hits := dispatch(ctx, pace.Constant{Rate: 1000, Duration: soft}, time.Now(), soft, ticks)
	if ctx.Err() != nil {
		t.Fatal("dispatch ran until the hard deadline instead of stopping at the soft end")
	}
	if hits != 0 {
		t.Fatalf("dispatch reports %d calls handed out, but no worker took one", hits)
	}
	if _, open := <-ticks; open {
		t.Fatal("ticks not closed")
	}
}
