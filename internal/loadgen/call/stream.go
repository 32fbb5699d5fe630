package call

import (
	"context"
	"time"

	"github.com/meteorbench/meteorbench/api"
)

// The stream scenarios (upload, chat, feed) make one message per call:
// each Caller keeps its stream open between its calls and opens the next
// after Options.Messages of them. What every protocol's adapter shares is
// here: the count, the stream's lifetime, and the setup time.

// MessagesPer is the messages per stream options o ask for.
func (o Options) MessagesPer() int {
	if o.Messages == 0 {
		return api.DefaultStreamMessages
	}
	return o.Messages
}

// Stream is a stream scenario caller's bookkeeping of its current stream:
// how many messages it has carried of the N it carries, and a context of
// its own (a stream outlives the calls that carry its messages; a call
// whose context ends while it waits ends the stream with it, so that the
// next call opens a new one).
type Stream struct {
	N      int // messages per stream
	Done   int // messages carried on the current stream
	open   bool
	cancel context.CancelFunc
}

// Open reports whether a stream is open and has messages left. When not,
// it ends the one before (end, if it was open) and calls start with a new
// context for the next, and returns the time both took: the call's
// Outcome.Setup.
func (s *Stream) Open(end func() error, start func(ctx context.Context) error) (setup time.Duration, err error) {
	if s.open && s.Done < s.N {
		return 0, nil
	}
	t0 := time.Now()
	if s.open {
		err := end()
		s.Close()
		if err != nil {
			return 0, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := start(ctx); err != nil {
		cancel()
		return 0, err
	}
	s.open, s.cancel, s.Done = true, cancel, 0
	return max(time.Since(t0), 1), nil
}

// Guard ends the stream if ctx (the call's) ends before the returned stop
// is called: a message that times out takes its stream with it.
func (s *Stream) Guard(ctx context.Context) (stop func() bool) {
	cancel := s.cancel
	return context.AfterFunc(ctx, cancel)
}

// Close ends the stream at once (after an error: the next call opens a
// new one).
func (s *Stream) Close() {
	if s.cancel != nil {
		s.cancel()
	}
	s.open, s.cancel = false, nil
}
