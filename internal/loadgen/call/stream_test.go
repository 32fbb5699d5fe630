package call_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// TestStream: a stream opens on the first call, carries N messages, and
// the call after the N-th ends it and opens the next (both in that call's
// setup); a failed start leaves none open, and Close makes the next call
// open a new one without ending the old; a call's context that ends
// cancels the stream's.
func TestStream(t *testing.T) {
	var starts, ends int
	var last context.Context
	start := func(ctx context.Context) error { starts++; last = ctx; return nil }
	end := func() error { ends++; return nil }
	s := call.Stream{N: 2}
	for i, want := range []struct {
		setup        bool
		starts, ends int
	}{{true, 1, 0}, {false, 1, 0}, {true, 2, 1}, {false, 2, 1}, {true, 3, 2}} {
		setup, err := s.Open(end, start)
		if err != nil || (setup > 0) != want.setup || starts != want.starts || ends != want.ends {
			t.Fatalf("call %d: setup %v, %v, %d starts, %d ends; want setup %v, %d, %d", i, setup, err, starts, ends, want.setup, want.starts, want.ends)
		}
		s.Done++
	}
	s.Close()
	if last.Err() == nil {
		t.Error("Close left the stream's context open")
	}
	if setup, _ := s.Open(end, start); setup == 0 || ends != 2 {
		t.Errorf("after Close: setup %v, %d ends; want a new stream without ending the closed one", setup, ends)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop := s.Guard(ctx)
	cancel()
	select { // context.AfterFunc runs in a goroutine of its own
	case <-last.Done():
	case <-time.After(10 * time.Second):
		t.Error("the call's context ended, the stream's did not")
	}
	stop()
	s.Close()
	failed := errors.New("refused")
	if _, err := s.Open(end, func(context.Context) error { return failed }); !errors.Is(err, failed) {
		t.Errorf("failed start: %v", err)
	}
	if setup, _ := s.Open(end, start); setup == 0 || ends != 2 {
		t.Errorf("after a failed start: setup %v, %d ends; want a new stream, nothing to end", setup, ends)
	}
}
