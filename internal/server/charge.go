package server

// Correcting a call's send-budget charge to what grpc-go really queued.
//
// A large RPC charges its connection's send budget (limits.go) an estimate
// before it builds its answer, so that a client that does not read makes
// the handler wait holding no buffer. The budget is paid back only by the
// bytes the socket writes. An estimate above what is then written leaks:
// with grpc-encoding gzip the 1000-record list is charged 96,000 B and
// carries about 36,700 B on the wire, so each call left about 59 KB charged
// forever, and after some 140 calls on one connection the list lane was
// "full" with nothing queued: the next call waited for the forgiveness, the
// one after for the stall close (issue 15).
//
// grpc-go reports, after it has queued a message, the message's length on
// the wire, compressed and with its 5-byte prefix (stats.OutPayload, from
// serverStream.SendMsg, in the handler's goroutine). chargeStats, a
// stats.Handler, gives each charging call a callCharge in its context
// (TagRPC); the handler records there what it charged for the message it is
// about to send, and the OutPayload event corrects the charge to the wire
// length. A call that ends with a charge no message used (an error, or a
// send that failed before queueing) gives it back at its End event.
//
// Cost: with a stats.Handler installed, grpc-go builds its stats events for
// every call, small ones included: BenchmarkCall/grpc/GetVersion went from
// 162 to 180 allocations (10.5 to 11.7 KB) a call, client and server
// together. No cheaper hook sees the compressed length: the codec runs
// before compression and the compressor does not know the call.

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc/stats"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
)

// callCharge is the charge of the message a call is about to send: set by
// the handler after acquire, settled by chargeStats. One call's events and
// its handler run in one goroutine, one after the other, so it needs no lock.
type callCharge struct {
	budget  *sendBudget
	lane    lane
	pending int64 // charged for the next message, not yet settled
	in      int64 // length of the request message received (an upload)
}

type chargeKey struct{}

// chargeFrom returns the call's charge record, or nil (a method that does
// not charge, or a server without chargeStats).
func chargeFrom(ctx context.Context) *callCharge {
	c, _ := ctx.Value(chargeKey{}).(*callCharge)
	return c
}

// acquireCharge charges n bytes to lane l of the call's connection (waiting
// as sendBudget.acquire does) and records them as the charge of the next
// message the call sends.
func acquireCharge(ctx context.Context, l lane, n int64) error {
	b := sendBudgetFrom(ctx)
	if err := b.acquire(ctx, l, n); err != nil {
		return err
	}
	if c := chargeFrom(ctx); c != nil && b != nil {
		c.budget, c.lane, c.pending = b, l, c.pending+n
	}
	return nil
}

// dropCharge gives back what the call charged for a message it will not
// send (its Send failed), so that only the caller's own refund applies.
func dropCharge(ctx context.Context) {
	if c := chargeFrom(ctx); c != nil && c.budget != nil {
		c.budget.refund(c.lane, c.pending)
		c.pending = 0
	}
}

// settle replaces the pending charge by wire, the bytes grpc-go queued.
func (c *callCharge) settle(wire int64) {
	if c.budget == nil {
		return
	}
	switch d := wire - c.pending; {
	case d < 0:
		c.budget.refund(c.lane, -d)
	case d > 0:
		c.budget.charge(c.lane, d)
	}
	c.pending = 0
}

// chargeStats is the gRPC server's stats.Handler: it settles the charges
// of the two methods that charge, notes the size of an upload (charged by
// unaryInterceptor), and ignores everything else.
type chargeStats struct{}

func (chargeStats) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	switch info.FullMethodName {
	case pb.MeteoriteLandingsService_GetLargePayloadAsList_FullMethodName,
		pb.MeteoriteLandingsService_GetLargePayload_FullMethodName,
		pb.MeteoriteLandingsService_PostLargePayload_FullMethodName,
		pb.MeteoriteLandingsService_Feed_FullMethodName: // streams.go
		return context.WithValue(ctx, chargeKey{}, &callCharge{})
	}
	return ctx
}

func (chargeStats) HandleRPC(ctx context.Context, s stats.RPCStats) {
	switch e := s.(type) {
	case *stats.InPayload:
		if c := chargeFrom(ctx); c != nil {
			c.in = int64(e.Length)
		}
	case *stats.OutPayload:
		if c := chargeFrom(ctx); c != nil {
			c.settle(int64(e.WireLength))
		}
	case *stats.End:
		if c := chargeFrom(ctx); c != nil && c.budget != nil && c.pending > 0 {
			c.budget.refund(c.lane, c.pending)
			c.pending = 0
		}
		if tc, ok := ctx.Value(tapChargeKey{}).(*tapCharge); ok {
			tc.end()
		}
	}
}

// tapCharge is the callOverhead the tap (grpc.go) charged a large call,
// given back once, at the call's End event. grpc-go also aborts, without
// an End, a call whose deadline passes between the tap and the start of its
// handler: for a call with a deadline, its context's end gives the charge
// back too (context.AfterFunc; not for every call, as that starts a
// goroutine for each call the client resets, 100,000 in the rapid-reset
// attack).
type tapCharge struct {
	mem  *memBudget
	done atomic.Bool
	stop func() bool // context.AfterFunc's, or nil
}

type tapChargeKey struct{}

func withTapCharge(ctx context.Context, mem *memBudget) context.Context {
	tc := &tapCharge{mem: mem}
	if _, ok := ctx.Deadline(); ok {
		tc.stop = context.AfterFunc(ctx, tc.release)
	}
	return context.WithValue(ctx, tapChargeKey{}, tc)
}

func (tc *tapCharge) release() {
	if tc.done.CompareAndSwap(false, true) {
		tc.mem.endCall()
	}
}

// end is the call's End event.
func (tc *tapCharge) end() {
	if tc.stop != nil {
		tc.stop()
	}
	tc.release()
}

func (chargeStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (chargeStats) HandleConn(context.Context, stats.ConnStats) {}
