package lean

import "time"

// Age makes a client's callers past their first SampleAll, so that only
// one call in SampleEvery is decoded (benchmarks of the steady state).
func Age(c any) {
	past := time.Now().Add(-2 * SampleAll)
	switch c := c.(type) {
	case *restClient:
		c.born = past
	case *grpcClient:
		c.born = past
	case *webH1Client:
		c.born = past
	case *webH2Client:
		c.born = past
	}
}

// RetireIn makes each connection of a lean gRPC client open only n more
// streams before its stream IDs run out (tests of their retirement).
func RetireIn(c any, n int) {
	g := c.(*grpcClient)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, sl := range g.slots {
		if h := sl.h; h != nil {
			h.wmu.Lock()
			h.mu.Lock()
			h.nextID = maxStreamID - 2*uint32(n-1)
			h.mu.Unlock()
			h.wmu.Unlock()
		}
	}
}

// ControlWriteTimeout bounds a write of control frames (tests of a peer
// that stops reading).
const ControlWriteTimeout = controlWriteTimeout
