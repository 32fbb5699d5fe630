package session

import (
	"context"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/loadgentest"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// BenchmarkCall is one call of every scenario over every protocol against
// the real server (in this process: ns/op is client plus server), with the
// adapters' allocations and bytes on the wire per call.
func BenchmarkCall(b *testing.B) {
	std, err := plan.EngineOf(plan.Config{}, results.CellKey{})
	if err != nil {
		b.Fatal(err)
	}
	open := func(p api.Protocol, o call.Options) (call.Client, error) { return std.Client(plan.Config{}, p, o) }
	addr := servertest.Start(b, server.Config{})
	for _, sc := range api.Scenarios() {
		for _, proto := range api.DefaultProtocols() {
			b.Run(string(sc)+"/"+string(proto), func(b *testing.B) {
				d := &wire.Dialer{}
				client, caller := loadgentest.Open(b, open, proto, call.Options{Target: addr, Workers: 1, Dialer: d}, sc)
				defer client.Close()
				ctx := context.Background()
				if _, err := caller.Call(ctx); err != nil { // connect outside the timing
					b.Fatal(err)
				}
				before := d.Stats()
				b.ReportAllocs()
				for b.Loop() {
					cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					if _, err := caller.Call(cctx); err != nil {
						b.Fatal(err)
					}
					cancel()
				}
				w := d.Stats().Sub(before)
				b.ReportMetric(float64(w.Sent)/float64(b.N), "B-sent/op")
				b.ReportMetric(float64(w.Received)/float64(b.N), "B-recv/op")
			})
		}
	}
}
