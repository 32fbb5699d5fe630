package lean

import (
	"context"
	"math"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
)

// TestGRPCTimeoutFormat: the finest unit whose value has at most eight
// digits, rounded up, as grpc-go's client writes grpc-timeout.
func TestGRPCTimeoutFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                        "0n",
		0:                                   "0n",
		1:                                   "1n",
		99999999:                            "99999999n",
		100000000:                           "100000u",
		100000001:                           "100001u", // rounded up: the server's deadline is never earlier
		10 * time.Second:                    "10000000u",
		10*time.Second - 7*time.Microsecond: "9999993u",
		100 * time.Second:                   "100000m",
		30 * time.Hour:                      "108000S",
		3000 * time.Hour:                    "10800000S",
		1 << 62:                             "76861434M",
		math.MaxInt64:                       "2562048H",
	} {
		if got := grpcTimeout(d); got != want {
			t.Errorf("grpcTimeout(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestGRPCTimeoutReachesServer: a lean call's deadline reaches grpc-go's
// server as grpc-timeout, the earlier of the call's own and its context's,
// as grpc-go's client sends it.
func TestGRPCTimeoutReachesServer(t *testing.T) {
	left := make(chan time.Duration, 4)
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, st grpc.ServerStream) error {
		dl, ok := st.Context().Deadline()
		if !ok {
			left <- -1
		} else {
			left <- time.Until(dl)
		}
		return status.Error(codes.Unimplemented, "only the deadline is looked at")
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	c, err := New(api.GRPC, call.Options{Target: ln.Addr().String(), Workers: 1, Dialer: &wire.Dialer{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	a, err := c.Caller(api.Small)
	if err != nil {
		t.Fatal(err)
	}
	dc := a.(call.DeadlineCaller)
	for _, tc := range []struct {
		name       string
		own, ctxDL time.Duration // 0: none
	}{{"the call's own deadline", 3 * time.Second, 0}, {"the context's, earlier", 3 * time.Second, 2 * time.Second}} {
		ctx := context.Background()
		if tc.ctxDL > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, tc.ctxDL)
			defer cancel()
		}
		want := tc.own
		if tc.ctxDL > 0 && tc.ctxDL < want {
			want = tc.ctxDL
		}
		if _, err := dc.CallBy(ctx, time.Now().Add(tc.own)); err == nil {
			t.Fatalf("%s: the call succeeded against a server that answers none", tc.name)
		}
		select {
		case got := <-left:
			// The server reads it a little later than the client wrote it.
			if got > want || got < want-500*time.Millisecond {
				t.Errorf("%s: the server saw %v left, want just under %v", tc.name, got, want)
			} else {
				t.Logf("%s: the server saw %v left of %v", tc.name, got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the call never reached the server", tc.name)
		}
	}
}
