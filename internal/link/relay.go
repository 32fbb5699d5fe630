package link

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/meteorbench/meteorbench/internal/clock"
)

// Relay is an emulated link in front of one target: it listens on
// 127.0.0.1, and forwards each accepted connection to the target over
// loopback TCP, delaying the bytes as the link would. Dial through
// DialContext; the client keeps real sockets (deadlines, half-close and
// byte counting work as without a link), and the bytes it counts are the
// application's: the emulation adds nothing to the stream.
//
// The model, per direction (client to target, target to client):
//
//   - One transmitter shared by all of the relay's connections, like the
//     bottleneck of a real link: a chunk of n bytes read at time t starts
//     when the transmitter is free (FIFO across connections), takes
//     n·8/bandwidth to send, and is delivered whole RTT/2 after its last
//     bit (store and forward). Chunks are at most about 1 ms of the link's
//     time (at least 1500 B), so the store-and-forward step is small.
//   - A drop-free buffer per connection and direction of twice the
//     bandwidth-delay product (at least 16 chunks' bytes, and at most 1024
//     chunks): when it is full the relay stops reading, and TCP pushes back
//     on the sender.
//   - A connection costs one RTT before DialContext returns (the SYN and
//     SYN-ACK of a real handshake); the relay's own connection to the target
//     is over loopback, not delayed.
//
// Not modelled: packet loss, TCP congestion control and slow start on the
// emulated path (the sender's TCP runs over loopback), MTU-sized packets
// and per-packet header overhead (bandwidth is application bytes per
// second), jitter.
//
// Deliveries are timed as the load generator's open-loop pacer waits: raw
// nanosleep to 100 µs before the due time, then a yielding spin, so a
// delivery is typically a few µs to 0.1 ms late (a Go timer would be 0.6-0.9
// ms late on a small VM). That lateness, on loopback's own latency and the
// relay's copies, is the emulator's floor: a few tens of µs per direction on
// an idle machine, more when the CPUs are busy.
type Relay struct {
	spec   Spec
	target string
	ln     net.Listener
	chunk  int // largest chunk, bytes
	budget int // bytes in flight per connection and direction
	pool   sync.Pool
	up     transmitter // client to target
	down   transmitter // target to client

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Listen starts a relay for spec in front of target (host:port) on
// 127.0.0.1 and an ephemeral port. Close stops it. A none spec is an error:
// without a link there is nothing to relay.
func Listen(spec Spec, target string) (*Relay, error) {
	if target == "" {
		return nil, ErrNoTarget
	}
	if spec.None() {
		return nil, errors.New("link: no link to emulate")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Relay{spec: spec, target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	bytesPerS := spec.bps / 8
	r.chunk = int(min(max(bytesPerS/1000, 1500), 64<<10)) // ~1 ms of the link
	bdp := float64(bytesPerS) * spec.rtt.Seconds()
	r.budget = max(2*int(bdp), 16*r.chunk)
	r.pool.New = func() any { b := make([]byte, r.chunk); return &b }
	for _, t := range []*transmitter{&r.up, &r.down} {
		t.bps = spec.bps
		t.oneWay = spec.rtt / 2
	}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// Addr is the relay's listening address.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

// Spec is the emulated link.
func (r *Relay) Spec() Spec { return r.spec }

// DialContext opens a connection to the target through the link, whatever
// addr says (it fits http.Transport.DialContext and, through a closure,
// grpc.WithContextDialer). It returns after one RTT, the handshake's cost.
func (r *Relay) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", r.Addr())
	if err != nil {
		return nil, err
	}
	if !clock.WaitUntil(ctx.Done(), time.Now().Add(r.spec.rtt)) {
		c.Close()
		return nil, ctx.Err()
	}
	return c, nil
}

// Close stops the relay: it closes the listener and every relayed
// connection, and waits for the relay's goroutines.
func (r *Relay) Close() error {
	err := r.ln.Close()
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	return err
}

// track adds c to the live connections; false when the relay is closed.
func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		c.Close()
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Relay) untrack(cs ...net.Conn) {
	r.mu.Lock()
	for _, c := range cs {
		delete(r.conns, c)
		c.Close()
	}
	r.mu.Unlock()
}

func (r *Relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		if !r.track(c) {
			return
		}
		r.wg.Add(1)
		go r.serve(c)
	}
}

// serve relays one client connection.
func (r *Relay) serve(client net.Conn) {
	defer r.wg.Done()
	d := net.Dialer{Timeout: 10 * time.Second}
	server, err := d.Dial("tcp", r.target)
	if err != nil {
		r.untrack(client)
		return
	}
	if !r.track(server) {
		r.untrack(client)
		return
	}
	setNoDelay(client)
	setNoDelay(server)
	done := make(chan struct{})
	var once sync.Once
	abort := func() {
		once.Do(func() {
			close(done)
			client.Close()
			server.Close()
		})
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.pipe(client, server, &r.up, done, abort) }()
	go func() { defer wg.Done(); r.pipe(server, client, &r.down, done, abort) }()
	wg.Wait()
	abort()
	r.untrack(client, server)
}

func setNoDelay(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
}

// transmitter is one direction's bottleneck, shared by the connections.
type transmitter struct {
	bps    int64
	oneWay time.Duration

	mu   sync.Mutex
	free time.Time // when the last reserved bit has been sent
}

// send reserves the link for n bytes read at now and returns when they are
// delivered at the far end.
func (t *transmitter) send(now time.Time, n int) time.Time {
	// Round up, so the link never runs faster than its rate.
	d := time.Duration((int64(n)*8*int64(time.Second) + t.bps - 1) / t.bps)
	t.mu.Lock()
	start := now
	if t.free.After(start) {
		start = t.free
	}
	t.free = start.Add(d)
	end := t.free
	t.mu.Unlock()
	return end.Add(t.oneWay)
}

// chunk is bytes in flight; buf nil is the end of the stream (err is why).
type chunk struct {
	buf  *[]byte
	n    int
	pool bool // buf came from the pool
	due  time.Time
	err  error
}

// maxChunks bounds the chunks in flight per connection and direction, on
// top of the byte budget (so tiny reads cannot pile up without bound).
const maxChunks = 1024

// budget bounds the bytes in flight on one connection and direction.
type budget struct {
	mu     sync.Mutex
	cond   sync.Cond
	used   int
	max    int
	closed bool
}

// wait blocks while the budget is spent; false once it is closed.
func (b *budget) wait() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.used >= b.max && !b.closed {
		b.cond.Wait()
	}
	return !b.closed
}

func (b *budget) add(n int) {
	b.mu.Lock()
	b.used += n
	b.mu.Unlock()
	if n < 0 {
		b.cond.Signal()
	}
}

func (b *budget) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cond.Broadcast()
}

// pipe copies src to dst through t: a reader stamps chunks with their
// delivery time, a writer delivers them on time.
func (r *Relay) pipe(src, dst net.Conn, t *transmitter, done <-chan struct{}, abort func()) {
	q := make(chan chunk, maxChunks+1) // never blocks: slots bounds what is in it
	slots := make(chan struct{}, maxChunks)
	b := &budget{max: r.budget}
	b.cond.L = &b.mu
	var reader sync.WaitGroup
	defer reader.Wait() // it ends at its stream's end or on abort (closed conns)
	defer b.close()
	reader.Add(1)
	go func() {
		defer reader.Done()
		for {
			select {
			case slots <- struct{}{}:
			case <-done:
				return
			}
			if !b.wait() {
				return
			}
			buf := r.pool.Get().(*[]byte)
			n, err := src.Read(*buf)
			if n > 0 {
				c := chunk{buf: buf, n: n, pool: true}
				if n < len(*buf)/4 { // keep small reads small
					small := append([]byte(nil), (*buf)[:n]...)
					r.pool.Put(buf)
					c.buf, c.pool = &small, false
				}
				b.add(n)
				c.due = t.send(time.Now(), n)
				q <- c
			} else {
				r.pool.Put(buf)
				<-slots
			}
			if err != nil {
				q <- chunk{due: t.send(time.Now(), 0), err: err}
				return
			}
		}
	}()
	w := clock.NewWaiter(done)
	defer w.Close()
	for { // writer
		var c chunk
		select {
		case c = <-q:
		case <-done:
			return
		}
		if !w.Until(c.due) {
			return
		}
		if c.buf == nil {
			if errors.Is(c.err, io.EOF) {
				if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
					return // half-close, as the sender did
				}
			}
			abort()
			return
		}
		_, err := dst.Write((*c.buf)[:c.n])
		if c.pool {
			r.pool.Put(c.buf)
		}
		b.add(-c.n)
		<-slots
		if err != nil {
			abort()
			return
		}
	}
}
