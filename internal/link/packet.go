package link

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meteorbench/meteorbench/internal/clock"
	"github.com/meteorbench/meteorbench/internal/link/netns"
)

// The packet link's addresses: a /30 on the TUN device of each namespace,
// private, and never outside the namespaces the link made.
const (
	ServerIP = "10.203.0.1"
	ClientIP = "10.203.0.2"
	tunName  = "mb0"
	tunMTU   = 1500
	// Congestion is the TCP congestion control of the connections through
	// the link, both ends (set on each socket: a namespace's default may
	// only be one of the host's allowed ones): Linux's default, which a
	// VPS runs unless told otherwise. A host may default to bbr, which
	// hardly slows down for random loss.
	Congestion = "cubic"
)

// Packet is the packet-level link: two network namespaces (the server's
// and the load generator's), a TUN device in each, and a forwarder in
// this process that carries every IP packet from one device to the other,
// each direction on its own, through the Spec set with Set:
//
//   - Loss first, as netem does: random (each packet lost with the Spec's
//     probability), or in bursts, a two-state Gilbert-Elliott chain that
//     loses every packet in its bad state and none in its good one, with
//     the bad state's mean length the Spec's Burst and its share the loss.
//   - The bottleneck: packets leave one after the other at the link's
//     rate (IP bytes, headers included); a packet that would wait behind
//     more than the queue's bytes (the bandwidth-delay product, at least
//     64 KiB) is dropped at the tail, as a router's full buffer drops it.
//   - Delay: each packet arrives RTT/2 after its last bit left, plus a
//     jitter drawn uniformly from ±Jitter, but never before the packet
//     ahead of it (jitter does not reorder).
//   - Reordering: a share of packets is held back and delivered right
//     after the packet behind it (or 1 ms late if none follows).
//
// The kernels on both ends see real packets and real loss: their TCP
// (congestion control, retransmissions, SACK) and QUIC react as they would
// on a real path. Deliveries are timed with clock.Waiter (the netpoller's
// wake-up, tens of µs late); Check measures what the link delivers.
type Packet struct {
	server, client *netns.NS
	stun, ctun     *os.File
	up, down       *direction // client to server, server to client
	done           chan struct{}
	wg             sync.WaitGroup
	closeOnce      sync.Once
	closeErr       error
}

// NewPacket makes the namespaces (first removing those of runs that were
// killed: swept names them), their TUN devices and addresses, and starts
// the forwarder with no link (no delay, no loss) until Set. Close undoes
// it all. An error says why the packet link is not available here.
func NewPacket() (p *Packet, swept []string, err error) {
	if err := netns.Available(); err != nil {
		return nil, nil, err
	}
	swept, err = netns.Sweep()
	if err != nil {
		return nil, swept, fmt.Errorf("remove the namespaces of killed runs: %w", err)
	}
	p = &Packet{done: make(chan struct{})}
	defer func() {
		if err != nil {
			p.Close()
			p = nil
		}
	}()
	if p.server, err = netns.Create(netns.Name("server")); err != nil {
		return p, swept, err
	}
	if p.client, err = netns.Create(netns.Name("client")); err != nil {
		return p, swept, err
	}
	for _, end := range []struct {
		ns   *netns.NS
		file **os.File
		ip   string
	}{{p.server, &p.stun, ServerIP}, {p.client, &p.ctun, ClientIP}} {
		if *end.file, err = end.ns.OpenTUN(tunName); err != nil {
			return p, swept, err
		}
		if err = end.ns.IP("addr", "add", end.ip+"/30", "dev", tunName); err != nil {
			return p, swept, err
		}
		if err = end.ns.IP("link", "set", tunName, "mtu", strconv.Itoa(tunMTU), "up"); err != nil {
			return p, swept, err
		}
	}
	p.up = newDirection(p.ctun, p.stun)
	p.down = newDirection(p.stun, p.ctun)
	for _, d := range []*direction{p.up, p.down} {
		p.wg.Add(2)
		go func() { defer p.wg.Done(); d.read(p.done) }()
		go func() { defer p.wg.Done(); d.write(p.done) }()
	}
	return p, swept, nil
}

// ServerNS is the name of the server's namespace (serve --netns).
func (p *Packet) ServerNS() string { return p.server.Name }

// ClientNS is the name of the load generator's namespace.
func (p *Packet) ClientNS() string { return p.client.Name }

// Set makes the link s from now on, in both directions: packets already
// on their way arrive as the previous link had them. The bottleneck and
// the loss chain start afresh, and the counters (Stats) restart.
func (p *Packet) Set(s Spec) {
	p.up.set(s)
	p.down.set(s)
}

// DialContext opens a TCP connection from the load generator's namespace
// to the server's address at addr's port, through the link, whatever
// addr's host (it fits wire.Dialer.Dial).
func (p *Packet) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var c net.Conn
	err = p.client.Do(func() error {
		d := net.Dialer{Control: netns.ControlCongestion(Congestion)}
		var err error
		c, err = d.DialContext(ctx, "tcp4", net.JoinHostPort(ServerIP, port))
		return err
	})
	return c, err
}

// DialUDP opens a UDP socket in the load generator's namespace (for
// QUIC) and returns it with the server's address at addr's port, whatever
// addr's host (it fits wire.Dialer.UDP).
func (p *Packet) DialUDP(_ context.Context, addr string) (net.PacketConn, *net.UDPAddr, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, err
	}
	raddr, err := net.ResolveUDPAddr("udp4", net.JoinHostPort(ServerIP, port))
	if err != nil {
		return nil, nil, err
	}
	var c *net.UDPConn
	err = p.client.Do(func() error {
		var err error
		c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero})
		return err
	})
	return c, raddr, err
}

// ServerDo runs fn in the server's namespace (the link's self-test
// listens there).
func (p *Packet) ServerDo(fn func() error) error { return p.server.Do(fn) }

// ClientDo runs fn in the load generator's namespace.
func (p *Packet) ClientDo(fn func() error) error { return p.client.Do(fn) }

// CongestionControl is the TCP congestion control the load generator's
// namespace uses by default ("" when it cannot be read); the link's
// connections use Congestion.
func (p *Packet) CongestionControl() string {
	var name string
	p.client.Do(func() error {
		b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
		name = strings.TrimSpace(string(b))
		return err
	})
	return name
}

// Stats are one direction's counts since the last Set.
type Stats struct {
	Packets   int64 // read from the sending side
	Bytes     int64 // their IP bytes
	Lost      int64 // dropped by the loss model
	Overflow  int64 // dropped at the tail of the full queue
	Delivered int64 // written to the receiving side
	Reordered int64 // delivered after the packet behind them
}

// Stats returns the counts of each direction: up is the load generator to
// the server.
func (p *Packet) Stats() (up, down Stats) { return p.up.stats(), p.down.stats() }

// Close stops the forwarder, closes the TUN devices and removes the
// namespaces. It is safe to call more than once.
func (p *Packet) Close() error {
	p.closeOnce.Do(func() {
		close(p.done)
		var errs []error
		for _, f := range []*os.File{p.stun, p.ctun} {
			if f != nil {
				f.Close() // ends the readers
			}
		}
		p.wg.Wait()
		for _, n := range []*netns.NS{p.server, p.client} {
			if n != nil {
				errs = append(errs, n.Remove())
			}
		}
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

// packet is one IP packet on its way.
type packet struct {
	buf  []byte
	due  time.Time
	late bool // reordered: delivered after the packet behind it
}

// queueCap bounds the packets in flight per direction, beyond the byte
// queue (a link set to 10 s of delay at 10 Gbit/s would hold millions).
const queueCap = 1 << 16

// direction is one way of the link: a reader that judges each packet
// (loss, bottleneck, delay) and a writer that delivers it on time.
type direction struct {
	src, dst *os.File
	q        chan packet
	spec     atomic.Pointer[Spec]
	gen      atomic.Int64 // bumped by set: the reader starts afresh
	n        [6]atomic.Int64
}

func newDirection(src, dst *os.File) *direction {
	d := &direction{src: src, dst: dst, q: make(chan packet, queueCap)}
	d.spec.Store(&Spec{})
	return d
}

func (d *direction) set(s Spec) {
	d.spec.Store(&s)
	for i := range d.n {
		d.n[i].Store(0)
	}
	d.gen.Add(1)
}

func (d *direction) stats() Stats {
	return Stats{Packets: d.n[0].Load(), Bytes: d.n[1].Load(), Lost: d.n[2].Load(),
		Overflow: d.n[3].Load(), Delivered: d.n[4].Load(), Reordered: d.n[5].Load()}
}

// read judges every packet read from src: lost, dropped at the queue's
// tail, or queued with its delivery time.
func (d *direction) read(done <-chan struct{}) {
	var (
		gen     int64 = -1
		s       Spec
		rng     = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
		bad     bool      // Gilbert-Elliott state
		free    time.Time // when the bottleneck has sent what it holds
		lastDue time.Time
		queue   float64 // the tail-drop limit, bytes
	)
	scratch := make([]byte, 1<<16)
	for {
		n, err := d.src.Read(scratch)
		if err != nil {
			return // closed
		}
		now := time.Now()
		if g := d.gen.Load(); g != gen {
			gen, s = g, *d.spec.Load()
			bad, free, lastDue = false, now, now
			queue = max(s.BytesPerSecond()*s.rtt.Seconds(), 64<<10)
		}
		d.n[0].Add(1)
		d.n[1].Add(int64(n))
		if s.loss > 0 && lose(rng, s, &bad) {
			d.n[2].Add(1)
			continue
		}
		due := now
		if s.bps > 0 {
			start := free
			if start.Before(now) {
				start = now
			}
			if backlog := start.Sub(now).Seconds() * s.BytesPerSecond(); backlog+float64(n) > queue {
				d.n[3].Add(1)
				continue
			}
			free = start.Add(time.Duration((int64(n)*8*int64(time.Second) + s.bps - 1) / s.bps))
			due = free.Add(s.rtt / 2)
		}
		if s.jitter > 0 {
			due = due.Add(time.Duration(rng.Int64N(2*int64(s.jitter)+1)) - s.jitter)
		}
		if due.Before(lastDue) {
			due = lastDue
		}
		lastDue = due
		p := packet{buf: append([]byte(nil), scratch[:n]...), due: due}
		p.late = s.reorder > 0 && rng.Int64N(1e6) < s.reorder
		select {
		case d.q <- p:
		case <-done:
			return
		default:
			d.n[3].Add(1) // more packets in flight than queueCap
		}
	}
}

// lose steps the loss model for one packet: random loss, or the
// Gilbert-Elliott chain whose state bad holds.
func lose(rng *rand.Rand, s Spec, bad *bool) bool {
	p := s.Loss()
	if s.burst == 0 {
		return rng.Float64() < p
	}
	r := 1 / s.burst         // bad to good
	enter := p * r / (1 - p) // good to bad: the bad state's share is p
	if *bad {
		*bad = rng.Float64() >= r
	} else {
		*bad = rng.Float64() < enter
	}
	return *bad
}

// holdMax is how long a reordered packet waits for the packet behind it.
const holdMax = time.Millisecond

// write delivers the queued packets to dst at their due times.
func (d *direction) write(done <-chan struct{}) {
	w := clock.NewWaiter(done)
	defer w.Close()
	var held *packet
	hold := time.NewTimer(time.Hour)
	defer hold.Stop()
	for {
		var p packet
		if held == nil {
			select {
			case p = <-d.q:
			case <-done:
				return
			}
		} else {
			hold.Reset(time.Until(held.due.Add(holdMax)))
			select {
			case p = <-d.q:
			case <-hold.C:
				d.deliver(*held, true)
				held = nil
				continue
			case <-done:
				return
			}
		}
		if !w.Until(p.due) {
			return
		}
		if p.late && held == nil {
			held = &p
			continue
		}
		d.deliver(p, false)
		if held != nil {
			d.deliver(*held, true)
			held = nil
		}
	}
}

func (d *direction) deliver(p packet, late bool) {
	if _, err := d.dst.Write(p.buf); err == nil {
		d.n[4].Add(1)
		if late {
			d.n[5].Add(1)
		}
	}
}
