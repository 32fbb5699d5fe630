package server

// A bound on the connections open at once, both protocols together
// (Config.MaxConns, serve --max-conns).
//
// Every other bound is per connection or per call, and each connection
// costs the server memory before it makes any call: grpc-go's read and
// write buffers (32 KiB each), its framer and three goroutines; net/http's
// buffers and goroutine; cmux's sniffing buffer. Without a bound, enough
// idle connections take any amount of memory that no budget sees.
//
// connGate wraps the root listener, before cmux and TLS, so a connection
// counts from its accept to its close whatever protocol it turns out to
// speak. Past the limit a new connection is accepted and closed at once:
// its client gets an immediate end of connection instead of waiting in the
// kernel's backlog (where netutil.LimitListener would leave it until a slot
// frees), and a full server keeps draining its backlog rather than letting
// it fill with clients that time out. Each open connection also holds
// connCost of the memory budget (membudget.go), so what connections take
// is charged against what answers may take.

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// connCost is what one open connection is charged in the memory budget:
// about what an idle gRPC connection holds (grpc-go's 32 KiB read and
// write buffers, framer, three goroutines); an HTTP/1.1 one holds less.
const connCost = 64 << 10

// connsShareOfBudget: by default the connections, at connCost each, may
// take at most half of the memory budget.
const connsShareOfBudget = 2

// DefaultMaxConns is Config.MaxConns's default for a memory limit: half of
// the memory budget (a quarter of the limit) at 64 KiB a connection, 1536
// for 768 MiB.
func DefaultMaxConns(memoryLimit int64) int {
	return int(max(1, memoryLimit/budgetShare/connsShareOfBudget/connCost))
}

// shedLogEvery is how often, at most, shedding is logged.
const shedLogEvery = 10 * time.Second

// connGate is a listener that keeps at most max connections open.
type connGate struct {
	net.Listener
	max  int64
	mem  *memBudget
	log  *slog.Logger
	open atomic.Int64
	shed atomic.Int64 // connections closed at once for want of room

	lastLog atomic.Int64 // unix nanoseconds of the last shedding log
}

func newConnGate(ln net.Listener, max int, mem *memBudget, log *slog.Logger) *connGate {
	return &connGate{Listener: ln, max: int64(max), mem: mem, log: log}
}

// Accept returns the next connection there is room for, closing at once
// those there is none for.
func (g *connGate) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if n := g.open.Add(1); n > g.max {
			g.open.Add(-1)
			g.refuse(c)
			continue
		}
		g.mem.force(connCost)
		return &gatedConn{Conn: c, gate: g}, nil
	}
}

// refuse counts c, then closes it unread: counted first, so a client that
// sees its connection closed and scrapes /metrics sees it counted.
func (g *connGate) refuse(c net.Conn) {
	shed := g.shed.Add(1)
	_ = c.Close()
	now := time.Now().UnixNano()
	if last := g.lastLog.Load(); now-last >= int64(shedLogEvery) && g.lastLog.CompareAndSwap(last, now) {
		g.log.Warn("connection limit reached: new connections are closed at once (--max-conns)",
			"open", g.open.Load(), "max_conns", g.max, "shed_total", shed)
	}
}

// gatedConn gives its place back when it is closed, once.
type gatedConn struct {
	net.Conn
	gate *connGate
	once sync.Once
}

func (c *gatedConn) Close() error {
	c.once.Do(func() {
		c.gate.open.Add(-1)
		c.gate.mem.release(connCost)
	})
	return c.Conn.Close()
}
