package server

import (
	"context"
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
		func() error { closed.Add(1); return nil }, slog.New(slog.DiscardHandler))
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
	if q := b.lanes[laneList].queued.Load(); q != 100 {
		t.Errorf("list lane: %d queued, want 100", q)
	}
	if q := b.lanes[laneStream].queued.Load(); q != 0 {
		t.Errorf("stream lane: %d queued, want 0 (a write takes from every lane, not below zero)", q)
	}
	b.wrote(1 << 20)
	if q := b.lanes[laneList].queued.Load(); q != 0 {
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
	if q := b.lanes[laneList].queued.Load(); q != 200 {
		t.Errorf("after a cancelled wait: %d queued, want 200", q)
	}

	// A refund gives bytes back (a stream the client reset).
	b.refund(laneList, 150)
	if q := b.lanes[laneList].queued.Load(); q != 50 {
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
