package server_test

// Helpers of the HTTP/2 attack tests (h2attack_test.go): a raw HTTP/2
// attacker over TCP, a well-behaved bystander that keeps calling both
// protocols, and an in-process heap and goroutine sampler. Names start with
// h2 so they cannot collide with the other test files of the package.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
)

const (
	// h2HeapBound is the largest heap growth (peak HeapInuse during an
	// attack over the baseline before it) the tests accept.
	h2HeapBound = 64 << 20
	// h2Guard bounds every blocking step so a bug fails instead of hanging.
	h2Guard = 10 * time.Second
	mib     = 1 << 20
)

// h2Conn is a raw HTTP/2 client connection: the attacker's side.
type h2Conn struct {
	t    testing.TB
	conn net.Conn
	bw   *bufio.Writer // the framer writes here; flush sends
	fr   *http2.Framer
	enc  *hpack.Encoder
	hbuf bytes.Buffer
	addr string
	next uint32 // next client stream id
}

// h2Dial connects to addr (127.0.0.1 only), sends the client preface and a
// SETTINGS frame with settings, and does not wait for the server.
func h2Dial(t testing.TB, addr string, settings ...http2.Setting) *h2Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, h2Guard)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &h2Conn{t: t, conn: conn, addr: addr, next: 1}
	c.bw = bufio.NewWriterSize(conn, 64<<10)
	c.fr = http2.NewFramer(c.bw, conn)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.SetMaxReadFrameSize(1 << 24)
	c.enc = hpack.NewEncoder(&c.hbuf)
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatalf("preface: %v", err)
	}
	if err := c.fr.WriteSettings(settings...); err != nil {
		t.Fatalf("settings: %v", err)
	}
	if err := c.flush(); err != nil {
		t.Fatalf("settings: %v", err)
	}
	return c
}

// flush sends what the framer wrote.
func (c *h2Conn) flush() error { return c.bw.Flush() }

// streamID returns a new client stream id.
func (c *h2Conn) streamID() uint32 {
	id := c.next
	c.next += 2
	return id
}

// grpcHeaders HPACK-encodes the request headers of a gRPC call of method
// (a full method name), with extra name/value pairs after them.
func (c *h2Conn) grpcHeaders(method string, extra ...string) []byte {
	c.hbuf.Reset()
	w := func(n, v string) { _ = c.enc.WriteField(hpack.HeaderField{Name: n, Value: v}) }
	w(":method", "POST")
	w(":scheme", "http")
	w(":path", method)
	w(":authority", c.addr)
	w("content-type", "application/grpc")
	w("te", "trailers")
	for i := 0; i+1 < len(extra); i += 2 {
		w(extra[i], extra[i+1])
	}
	return bytes.Clone(c.hbuf.Bytes())
}

// emptyGRPCMessage is one gRPC length-prefixed message with an empty body
// (EmptyRequest).
var emptyGRPCMessage = []byte{0, 0, 0, 0, 0}

// call starts a unary call on a new stream: HEADERS, then the empty request
// message with END_STREAM. It returns the stream id.
func (c *h2Conn) call(method string, extra ...string) (uint32, error) {
	id := c.streamID()
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{
		StreamID: id, BlockFragment: c.grpcHeaders(method, extra...), EndHeaders: true,
	}); err != nil {
		return id, err
	}
	return id, c.fr.WriteData(id, true, emptyGRPCMessage)
}

// h2Seen is what the attacker read from the server.
type h2Seen struct {
	frames    int
	rst       map[http2.ErrCode]int
	goAway    *http2.GoAwayFrame // the last one, copied
	goAwayDbg string
	readErr   error // what ended reading: EOF / reset means the server closed
	settings  map[http2.SettingID]uint32
	dataBytes int
}

func (s *h2Seen) String() string {
	out := fmt.Sprintf("%d frames", s.frames)
	if len(s.rst) > 0 {
		out += fmt.Sprintf(", RST_STREAM %v", s.rst)
	}
	if s.goAway != nil {
		out += fmt.Sprintf(", GOAWAY %v %q", s.goAway.ErrCode, s.goAwayDbg)
	}
	if s.readErr != nil {
		out += fmt.Sprintf(", read ended: %v", s.readErr)
	}
	return out
}

// closedByServer reports whether the server ended the connection (GOAWAY
// or EOF / reset), as opposed to our own read deadline.
func (s *h2Seen) closedByServer() bool {
	if s.goAway != nil {
		return true
	}
	var ne net.Error
	return s.readErr != nil && !(errors.As(s.readErr, &ne) && ne.Timeout())
}

// readAll reads frames until the connection ends or until deadline, and
// sums up what it saw. It must not run concurrently with another reader.
func (c *h2Conn) readAll(deadline time.Time, onFrame func(http2.Frame)) *h2Seen {
	seen := &h2Seen{rst: map[http2.ErrCode]int{}, settings: map[http2.SettingID]uint32{}}
	_ = c.conn.SetReadDeadline(deadline)
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			seen.readErr = err
			return seen
		}
		seen.frames++
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			seen.rst[f.ErrCode]++
		case *http2.GoAwayFrame:
			g := *f
			seen.goAway = &g
			seen.goAwayDbg = string(f.DebugData())
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = f.ForeachSetting(func(s http2.Setting) error { seen.settings[s.ID] = s.Val; return nil })
			}
		case *http2.DataFrame:
			seen.dataBytes += len(f.Data())
		}
		if onFrame != nil {
			onFrame(f)
		}
	}
}

// readInBackground reads (and discards) everything the server sends until
// the connection ends or stop is called; stop returns what was read.
func (c *h2Conn) readInBackground() (stop func() *h2Seen) {
	done := make(chan *h2Seen, 1)
	go func() { done <- c.readAll(time.Now().Add(h2Guard*3), nil) }()
	return func() *h2Seen {
		_ = c.conn.SetReadDeadline(time.Now()) // unblocks the reader
		return <-done
	}
}

// bystander is a well-behaved client of both protocols: grpc-go on its own
// connection and net/http REST, calling in a loop while an attack runs.
type bystander struct {
	t      testing.TB
	addr   string
	cc     *grpc.ClientConn
	grpc   pb.MeteoriteLandingsServiceClient
	http   *http.Client
	grpcOK atomic.Int64
	restOK atomic.Int64
	mu     sync.Mutex
	errs   []error
}

// newBystander warms up a bystander; with warmGenerated it also asks for
// the most records once, so the server's generated records (about 28 MB,
// built on the first call for more than 1000 and kept) are in the
// baseline.
func newBystander(t testing.TB, addr string, warmGenerated bool) *bystander {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	b := &bystander{t: t, addr: addr, cc: cc, grpc: pb.NewMeteoriteLandingsServiceClient(cc),
		http: &http.Client{Transport: tr, Timeout: h2Guard}}
	// Warm up both paths (connections, lazy state) before any baseline
	// is taken.
	b.round(context.Background())
	if !warmGenerated {
		b.grpcOK.Store(0)
		b.restOK.Store(0)
		return b
	}
	wctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(),
		api.MetadataRecords, fmt.Sprint(api.MaxRecords)), h2Guard)
	defer cancel()
	if _, err := b.grpc.GetLargePayloadAsList(wctx, &pb.EmptyRequest{}); err != nil {
		t.Fatalf("bystander warm-up: %v", err)
	}
	b.grpcOK.Store(0)
	b.restOK.Store(0)
	if err := b.err(); err != nil {
		t.Fatalf("bystander warm-up: %v", err)
	}
	return b
}

// round makes one call of each kind: gRPC GetVersion and
// GetLargePayloadAsList, REST GET version.
func (b *bystander) round(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, h2Guard)
	defer cancel()
	if _, err := b.grpc.GetVersion(cctx, &pb.EmptyRequest{}); err != nil {
		b.fail(fmt.Errorf("grpc GetVersion: %w", err))
	} else {
		b.grpcOK.Add(1)
	}
	if l, err := b.grpc.GetLargePayloadAsList(cctx, &pb.EmptyRequest{}); err != nil {
		b.fail(fmt.Errorf("grpc GetLargePayloadAsList: %w", err))
	} else if len(l.GetMeteoriteLandings()) != 1000 {
		b.fail(fmt.Errorf("grpc GetLargePayloadAsList: %d records", len(l.GetMeteoriteLandings())))
	} else {
		b.grpcOK.Add(1)
	}
	req, _ := http.NewRequestWithContext(cctx, http.MethodGet, "http://"+b.addr+api.PathVersion, nil)
	resp, err := b.http.Do(req)
	if err != nil {
		b.fail(fmt.Errorf("REST GET version: %w", err))
		return
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.fail(fmt.Errorf("REST GET version: %s %v", resp.Status, err))
		return
	}
	b.restOK.Add(1)
}

func (b *bystander) fail(err error) {
	b.mu.Lock()
	b.errs = append(b.errs, err)
	b.mu.Unlock()
}

func (b *bystander) err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return errors.Join(b.errs...)
}

// run calls in a loop until stop is called; stop returns the successful
// call counts.
func (b *bystander) run() (stop func() (grpcOK, restOK int64)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			b.round(context.Background()) // a started round finishes
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() (int64, int64) {
		cancel()
		<-done
		return b.grpcOK.Load(), b.restOK.Load()
	}
}

// heapSampler samples HeapInuse and the goroutine count of this process
// (the server runs in it) until stopped.
type heapSampler struct {
	mu           sync.Mutex // guards peak, peakG
	base, peak   uint64
	baseG, peakG int
	stop         chan struct{}
	done         chan struct{}
}

func heapInuse() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// settledHeap collects garbage and returns HeapInuse.
func settledHeap() uint64 {
	runtime.GC()
	runtime.GC()
	return heapInuse()
}

func startHeapSampler() *heapSampler {
	h := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	h.base = settledHeap()
	h.peak = h.base
	h.baseG = runtime.NumGoroutine()
	h.peakG = h.baseG
	go func() {
		defer close(h.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			h.sample()
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

func (h *heapSampler) sample() {
	v := heapInuse()
	h.mu.Lock()
	defer h.mu.Unlock()
	if v > h.peak {
		h.peak = v
	}
	if g := runtime.NumGoroutine(); g > h.peakG {
		h.peakG = g
	}
}

// finish stops sampling.
func (h *heapSampler) finish() {
	close(h.stop)
	<-h.done
}

// peakGrowth is the peak HeapInuse over the baseline so far, in bytes.
func (h *heapSampler) peakGrowth() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return int64(h.peak) - int64(h.base)
}

// goroutineGrowth is the peak goroutine count over the baseline so far.
func (h *heapSampler) goroutineGrowth() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.peakG - h.baseG
}

// h2Report is one attack's figures, logged in one line for the docs.
type h2Report struct {
	name            string
	outcome         string
	base, peak      uint64
	after           uint64
	baseG, peakG    int
	grpcOK, restOK  int64
	grpcAfterRounds int
}

func (r h2Report) String() string {
	return fmt.Sprintf("%s: %s | heap base %.1f MiB, peak +%.1f MiB, after +%.1f MiB | goroutines %d -> peak %d | bystander during: %d gRPC + %d REST calls OK, after: %d rounds OK",
		r.name, r.outcome,
		float64(r.base)/mib, float64(int64(r.peak)-int64(r.base))/mib, float64(int64(r.after)-int64(r.base))/mib,
		r.baseG, r.peakG, r.grpcOK, r.restOK, r.grpcAfterRounds)
}
