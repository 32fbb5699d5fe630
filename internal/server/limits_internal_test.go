package server

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestSendBudget: a lane admits while under its limit (one charge may
// exceed it), a waiter wakes when the socket takes bytes, the count never
// goes below zero, and a wait of the stall time closes the connection.
func TestSendBudget(t *testing.T) {
	var closed atomic.Int32
	b := newSendBudget([lanes]int64{laneList: 100, laneStream: 10}, time.Hour,
		func() error { closed.Add(1); return nil }, slog.New(slog.DiscardHandler), nil)
	ctx := context.Background()
	if err := b.acquire(ctx, laneList, 150); err != nil { // over the limit, but the lane was empty
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.acquire(ctx, laneList, 10) }()
	select {
	case err := <-got:
		t.Fatalf("admitted at 150 of 100 queued: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	// The stream lane is separate.
	if err := b.acquire(ctx, laneStream, 5); err != nil {
		t.Fatal(err)
	}
	b.wrote(60) // 90 queued: under the limit
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken by the write")
	}
	if q := b.queued(laneList); q != 100 {
		t.Errorf("list lane: %d queued, want 100", q)
	}
	if q := b.queued(laneStream); q != 0 {
		t.Errorf("stream lane: %d queued, want 0 (a write takes from every lane, not below zero)", q)
	}
	b.wrote(1 << 20)
	if q := b.queued(laneList); q != 0 {
		t.Errorf("after a large write: %d queued, want 0", q)
	}

	// A cancelled wait charges nothing.
	if err := b.acquire(ctx, laneList, 200); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.acquire(cctx, laneList, 10); status.Code(err) != codes.Canceled {
		t.Errorf("cancelled wait: %v, want Canceled", err)
	}
	if q := b.queued(laneList); q != 200 {
		t.Errorf("after a cancelled wait: %d queued, want 200", q)
	}

	// A refund gives bytes back (a stream the client reset).
	b.refund(laneList, 150)
	if q := b.queued(laneList); q != 50 {
		t.Errorf("after a refund of 150: %d queued, want 50", q)
	}
	b.refund(laneList, 1000)
	if err := b.acquire(ctx, laneList, 200); err != nil {
		t.Fatal(err)
	}

	// A stalled wait closes the connection.
	b.stall = 20 * time.Millisecond
	if err := b.acquire(ctx, laneList, 10); status.Code(err) != codes.Unavailable || closed.Load() != 1 {
		t.Errorf("stalled wait: %v, %d closes; want Unavailable and the connection closed", err, closed.Load())
	}

	// A nil budget (a connection from elsewhere) admits everything.
	var nb *sendBudget
	if err := nb.acquire(ctx, laneList, 1<<40); err != nil {
		t.Fatal(err)
	}
}

// TestMemBudget: the server-wide count admits within its limit (or anything
// when empty), a waiter is admitted by a release, and one that waits out
// budgetWait is refused with a busyError.
func TestMemBudget(t *testing.T) {
	m := newMemBudget(100)
	if !m.tryAcquire(150) { // empty: one charge may exceed the limit
		t.Fatal("an empty budget refused a charge")
	}
	if m.tryAcquire(1) {
		t.Fatal("admitted over the limit")
	}
	got := make(chan error, 1)
	go func() { got <- m.acquire(context.Background(), 50, time.Hour) }()
	time.Sleep(20 * time.Millisecond)
	m.release(100) // 50 charged: room for 50
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if u := m.used.Load(); u != 100 {
		t.Errorf("used %d, want 100", u)
	}
	err := m.acquire(context.Background(), 10, 10*time.Millisecond)
	if _, ok := err.(*busyError); !ok || m.refused.Load() != 1 {
		t.Errorf("wait past the limit: %v, %d refused; want a busyError", err, m.refused.Load())
	}
	if status.Code(grpcBusy(err)) != codes.ResourceExhausted {
		t.Errorf("gRPC form: %v", grpcBusy(err))
	}
}

// TestSendBudgetMem: a connection's charges are made in the server's
// budget too (stream bytes weighted), writes and refunds give them back,
// a forgiven count stays owed until written, closing gives everything back,
// and a charge the lane admits but the server's budget has no room for is
// refused after budgetWait with RESOURCE_EXHAUSTED.
func TestSendBudgetMem(t *testing.T) {
	m := newMemBudget(1000)
	b := newSendBudget([lanes]int64{laneList: 300, laneStream: 100}, time.Hour,
		func() error { return nil }, slog.New(slog.DiscardHandler), m)
	ctx := context.Background()
	if err := b.acquire(ctx, laneList, 200); err != nil {
		t.Fatal(err)
	}
	if err := b.acquire(ctx, laneStream, 50); err != nil {
		t.Fatal(err)
	}
	if u := m.used.Load(); u != 200+50*laneWeight[laneStream] {
		t.Fatalf("server budget %d, want %d", u, 200+50*laneWeight[laneStream])
	}
	b.wrote(20) // from both lanes
	if u := m.used.Load(); u != 180+30*laneWeight[laneStream] {
		t.Errorf("after a write: %d, want %d", u, 180+30*laneWeight[laneStream])
	}
	b.refund(laneStream, 30)
	b.maybeForgive(laneList) // 180 forgiven: owed
	if u, q := m.used.Load(), b.queued(laneList); u != 180 || q != 0 {
		t.Errorf("after forgiving: server %d, lane %d; want 180 and 0", u, q)
	}
	b.wrote(80)
	if u := m.used.Load(); u != 100 {
		t.Errorf("owed after a write of 80: %d, want 100", u)
	}
	// The server's budget is the limit now: the lane admits, the server does not.
	m.force(900)
	start := time.Now()
	err := b.acquire(ctx, laneList, 10)
	if status.Code(err) != codes.ResourceExhausted || time.Since(start) < budgetWait {
		t.Errorf("full server budget: %v after %v; want RESOURCE_EXHAUSTED after %v", err, time.Since(start), budgetWait)
	}
	m.release(900)
	b.closeConn()
	if u := m.used.Load(); u != 0 {
		t.Errorf("after close: %d, want 0", u)
	}
	if err := b.acquire(ctx, laneList, 10); !errors.Is(err, errStalled) {
		t.Errorf("charge on a closed connection: %v, want errStalled", err)
	}
	if u := m.used.Load(); u != 0 {
		t.Errorf("after a charge on a closed connection: %d, want 0", u)
	}
}
