package server_test

// The HTTP/2 attacks of h2attack_test.go on a connection whose first
// request is REST, which the HTTP/2 router (h2route.go) hands to net/http
// over h2c instead of grpc-go: the same bystander, heap bound and
// assertions, so REST over HTTP/2 has to hold what gRPC holds.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/testmode"
)

// restHeaders HPACK-encodes the request headers of a REST request.
func (c *h2Conn) restHeaders(method, path string, extra ...string) []byte {
	c.hbuf.Reset()
	kv := append([]string{":method", method, ":scheme", "http", ":path", path, ":authority", c.addr}, extra...)
	for i := 0; i+1 < len(kv); i += 2 {
		_ = c.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return bytes.Clone(c.hbuf.Bytes())
}

// get starts a GET on a new stream (HEADERS with END_STREAM) and returns
// its id.
func (c *h2Conn) get(path string, extra ...string) (uint32, error) {
	id := c.streamID()
	return id, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id,
		BlockFragment: c.restHeaders("GET", path, extra...), EndHeaders: true, EndStream: true})
}

// TestH2CRESTRapidReset: CVE-2023-44487 on a REST connection: GET of the
// list, then RST_STREAM(CANCEL), in a loop. net/http bounds the handlers
// running at once to MaxConcurrentStreams and ends a connection that keeps
// resetting faster than its handlers finish.
func TestH2CRESTRapidReset(t *testing.T) {
	rapidReset(t, "GET list", func(c *h2Conn) (uint32, error) { return c.get(api.PathList) })
}

// TestH2CRESTStreamExhaustion: more uploads than MAX_CONCURRENT_STREAMS on
// one REST connection, each HEADERS without END_STREAM and never a body,
// held open: those past the limit are refused, the held ones cost a
// goroutine and a few KiB each.
func TestH2CRESTStreamExhaustion(t *testing.T) {
	streamExhaustion(t, "uploads", func(c *h2Conn) []byte {
		return c.restHeaders("POST", api.PathList, "content-type", api.TypeProtobuf)
	})
}

// TestH2CRESTWindowExhaustion: slowloris over HTTP/2 on REST and on
// gRPC-Web. The client announces SETTINGS_INITIAL_WINDOW_SIZE 0, never
// sends WINDOW_UPDATE, and asks for the largest list on stream after
// stream: each handler writes until flow control stops it. The
// per-connection bound on answers (h2limits.go) keeps the handlers that
// hold an answer few, and a call that waited WriteTimeout for it closes the
// connection.
func TestH2CRESTWindowExhaustion(t *testing.T) {
	list := fmt.Sprintf("%s?%s=%d", api.PathList, api.QueryRecords, api.MaxRecords)
	// Under the race detector each kind's 300 largest lists took 5 CPU-s.
	restOnly := testmode.Short(t, "REST GET only (gRPC-Web's answers pass the same per-connection bound; the normal step runs both)")
	h2Attack(t, server.Config{WriteTimeout: 2 * time.Second}, true, func(t *testing.T, addr string, h *heapSampler) string {
		var out []string
		for i, k := range []struct {
			name string
			call func(c *h2Conn) error
		}{
			{"REST GET", func(c *h2Conn) error { _, err := c.get(list); return err }},
			{"gRPC-Web", func(c *h2Conn) error {
				id := c.streamID()
				if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true,
					BlockFragment: c.restHeaders("POST", pb.MeteoriteLandingsService_GetLargePayloadAsList_FullMethodName,
						"content-type", api.TypeGRPCWebProto, api.MetadataRecords, fmt.Sprint(api.MaxRecords))}); err != nil {
					return err
				}
				return c.fr.WriteData(id, true, emptyGRPCMessage)
			}},
		} {
			if restOnly && i > 0 {
				continue
			}
			out = append(out, k.name+": "+windowExhaustion(t, addr, h, k.call))
		}
		return strings.Join(out, "; ")
	})
}

// zeroWindow dials addr granting the server no send window, and reads
// the connection until it ends (or h2Guard passes), counting the HEADERS
// frames the server sends; done gives what was seen.
func zeroWindow(t *testing.T, addr string) (*h2Conn, *atomic.Int64, chan *h2Seen) {
	c := h2Dial(t, addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	headers := new(atomic.Int64)
	done := make(chan *h2Seen, 1)
	go func() {
		done <- c.readAll(time.Now().Add(h2Guard), func(f http2.Frame) {
			if _, ok := f.(*http2.MetaHeadersFrame); ok {
				headers.Add(1)
			}
		})
	}()
	return c, headers, done
}

// windowExhaustion opens a zero-window connection and makes up to 300
// calls of the largest list on it, 20 at a time, until the server closes
// it or the heap passes twice the bound.
func windowExhaustion(t *testing.T, addr string, h *heapSampler, call func(c *h2Conn) error) string {
	c, headers, done := zeroWindow(t, addr)
	const streams = 300
	opened, aborted, peak := 0, false, int64(0)
	for opened < streams && !aborted {
		for range 20 {
			if err := call(c); err != nil {
				t.Fatalf("call: %v", err)
			}
		}
		if err := c.flush(); err != nil {
			break
		}
		opened += 20
		time.Sleep(50 * time.Millisecond)
		g := int64(heapInuse()) - int64(h.base)
		peak = max(peak, g)
		aborted = g > 2*h2HeapBound
	}
	seen := <-done
	peak = max(peak, int64(heapInuse())-int64(h.base))
	c.conn.Close()
	t.Logf("window exhaustion: %d calls of %d records with window 0 (aborted at the heap bound: %v); answers begun: %d; heap +%.1f MiB; server: %s",
		opened, api.MaxRecords, aborted, headers.Load(), float64(peak)/mib, seen)
	if aborted {
		t.Errorf("the heap grew past %d MiB after %d calls", 2*h2HeapBound/mib, opened)
	}
	if !seen.closedByServer() {
		t.Errorf("the server did not close the connection (%s)", seen)
	}
	runtime.GC()
	return fmt.Sprintf("%d calls of %d records with window 0, %d answers begun, heap +%.1f MiB at its peak, then %s",
		opened, api.MaxRecords, headers.Load(), float64(peak)/mib, seen.goAwayOrErr())
}

// The attacks of h2attack_test.go that a connection's first request does
// not change run once on net/http's side, the first request REST: their
// frames (CONTINUATION, HPACK blocks, PING, SETTINGS) are read by
// net/http's HTTP/2 connection before any handler, whatever the first
// request was. Where the kind of request matters, the router's choice, the
// router tests below send each kind.

// TestH2CRESTContinuationFlood: TestH2ContinuationFlood's floods on a
// connection net/http serves over h2c. net/http's framer closes a
// connection whose header block passes twice what it will keep; empty
// frames are read and dropped.
func TestH2CRESTContinuationFlood(t *testing.T) {
	onH2C(t, "3 s (5 s under -race); net/http's framer is x/net's, which TestH2ContinuationFlood floods under -short", continuationFloodAttack)
}

// TestH2CRESTHPACKBomb: TestH2HPACKBomb's bomb on a connection net/http
// serves over h2c: each stream answered 431 once its list passes
// MaxHeaderBytes; a table size update above 4 KiB closes the connection.
func TestH2CRESTHPACKBomb(t *testing.T) {
	onH2C(t, "300 bombs take 6 s under -race; TestH2CRouterHPACKBomb bombs net/http under -short", hpackBomb)
}

// TestH2CRESTPingFlood: TestH2PingFlood's flood on a connection net/http
// serves over h2c. net/http has no ping policy: it answers every PING
// until its ACKs, unread, queue past its control-frame limit (10,000),
// then closes the connection.
func TestH2CRESTPingFlood(t *testing.T) { onH2C(t, "a flood of up to 60 s", pingFlood) }

// TestH2CRESTSettingsFlood: TestH2SettingsFlood's flood on a connection
// net/http serves over h2c. net/http keeps one SETTINGS ACK pending,
// however many SETTINGS came, and reads on: the flood costs it CPU, not
// memory (h2Attack's heap bound).
func TestH2CRESTSettingsFlood(t *testing.T) {
	onH2C(t, "a flood of 3 s", func(t *testing.T, s h2Start) { settingsFlood(t, s, true) })
}

// onH2C runs attack on a connection net/http serves over h2c (its first
// request REST, answered); under -short it skips, saying why.
func onH2C(t *testing.T, whyShort string, attack func(t *testing.T, s h2Start)) {
	testmode.SkipShort(t, whyShort+"; runs in the normal step")
	attack(t, h2Start{kind: kindREST, routed: true})
}

// TestH2CLargeFrames: 100 connections, each routed by a first request,
// then the header of an (unknown-type) frame as large as the server
// announced it would read, and a few bytes of its payload, held: a reader
// that sizes its buffer from the frame header holds that much for each.
// gRPC's and REST's connections must cost the same.
func TestH2CLargeFrames(t *testing.T) {
	for _, k := range []h2Kind{kindGRPC, kindREST} {
		t.Run(k.name, func(t *testing.T) { largeFrames(t, h2Start{kind: k, routed: true}, 100) })
	}
}

// largeFrames opens n connections started as s says; each sends the
// header of a frame of type 0xfa (unknown: to be read and ignored) of the
// largest size the server announced (SETTINGS_MAX_FRAME_SIZE; before
// routing, 16 MiB - 1, the protocol's most: the router announced none, so
// a client must keep to 16 KiB) and 100 bytes of its payload, and holds
// for a second while the bystander calls.
func largeFrames(t *testing.T, s h2Start, n int) {
	h2Attack(t, s.cfg, false, func(t *testing.T, addr string, h *heapSampler) string {
		hold := time.Now().Add(time.Second)
		seen := make(chan *h2Seen, n)
		size := uint32(1<<24 - 1)
		var conns []*h2Conn
		for range n {
			c := s.dial(t, addr)
			conns = append(conns, c)
			if s.routed {
				size = c.maxFrame
			}
			_, err := c.conn.Write(append([]byte{byte(size >> 16), byte(size >> 8), byte(size), 0xfa, 0, 0, 0, 0, 0}, make([]byte, 100)...))
			if err != nil {
				t.Fatalf("frame header: %v", err)
			}
			go func() { seen <- c.readAll(hold, nil) }()
		}
		time.Sleep(time.Until(hold))
		h.sample()
		held := h.peakGrowth()
		closed := 0
		for range n {
			if (<-seen).closedByServer() {
				closed++
			}
		}
		for _, c := range conns {
			c.conn.Close()
		}
		if !s.routed && closed < n {
			t.Errorf("%d of %d connections that began a frame over 16 KiB before their first request were closed", closed, n)
		}
		when := "before any request"
		if s.routed {
			when = "after a " + s.kind.name + " request"
		}
		return fmt.Sprintf("%d connections each began a %d B frame %s: %d closed by the server, heap +%.1f MiB (%.1f KiB a connection)",
			n, size, when, closed, float64(held)/mib, float64(held)/1024/float64(n))
	})
}

// The router's own phase: what a connection sends before (or as) its
// first request is read by sniffH2 (h2route.go), bounded in bytes
// (h2SniffBytes), frames (64), frame size (16 KiB, the protocol's initial
// SETTINGS_MAX_FRAME_SIZE) and time (HeaderTimeout). Each attack below is
// one of the attacks above sent before any request; routerLog tells which
// bound closed the connection.

// routerLog collects the reasons the server gives (at debug level) for
// closing an HTTP/2 connection before its first request.
type routerLog struct {
	mu      sync.Mutex
	reasons []string
}

func (l *routerLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *routerLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *routerLog) WithGroup(string) slog.Handler            { return l }
func (l *routerLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "HTTP/2 connection closed before its first request" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			l.mu.Lock()
			l.reasons = append(l.reasons, sockAddrs.ReplaceAllString(a.Value.String(), ""))
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

// sockAddrs is the "tcp A->B: " of a socket error, which differs for each
// connection.
var sockAddrs = regexp.MustCompile(`tcp \S+->\S+: `)

// routerStart is an attack on the router's phase (requests of kind, none
// answered first) against a server that logs to a new routerLog.
func routerStart(kind h2Kind, cfg server.Config) (h2Start, *routerLog) {
	l := &routerLog{}
	cfg.Logger = slog.New(l)
	return h2Start{kind: kind, cfg: cfg}, l
}

// want checks that every connection the router closed was closed for a
// reason that contains one of reasons, and at least one was; it returns
// the reasons seen, counted.
func (l *routerLog) want(t *testing.T, reasons ...string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	counts := map[string]int{}
	for _, r := range l.reasons {
		counts[r]++
		if !slices.ContainsFunc(reasons, func(w string) bool { return strings.Contains(r, w) }) {
			t.Errorf("the router closed a connection for %q, want one of %q", r, reasons)
		}
	}
	if len(l.reasons) == 0 {
		t.Errorf("the router closed no connection, want one closed for %q", reasons)
	}
	t.Logf("router closed connections: %v", counts)
	return fmt.Sprint(counts)
}

// TestH2CRouterContinuationFlood: the CONTINUATION floods as the first
// request: with header fields, the router's framer gives up past the
// header list bound; empty frames, it reads until h2SniffBytes.
func TestH2CRouterContinuationFlood(t *testing.T) {
	s, l := routerStart(kindREST, server.Config{})
	continuationFloodAttack(t, s)
	l.want(t, "PROTOCOL_ERROR", "too many bytes before the first request")
}

// TestH2CRouterHPACKBomb: the HPACK bomb as the first request, of each
// kind: the router decodes the first block to its header list bound (the
// decoder stops emitting, not decoding) and routes by the content-type it
// saw; the chosen server then refuses every stream.
func TestH2CRouterHPACKBomb(t *testing.T) {
	for _, k := range []h2Kind{kindGRPC, kindREST, kindGRPCWeb, kindConnect} {
		t.Run(k.name, func(t *testing.T) {
			s, _ := routerStart(k, server.Config{})
			hpackBomb(t, s)
		})
	}
}

// TestH2CRouterPingFlood: PINGs before any request: the router reads 64
// frames and closes.
func TestH2CRouterPingFlood(t *testing.T) {
	s, l := routerStart(kindREST, server.Config{})
	pingFlood(t, s)
	l.want(t, "no request headers in the first")
}

// TestH2CRouterSettingsFlood: SETTINGS before any request: the router
// reads 64 frames and closes.
func TestH2CRouterSettingsFlood(t *testing.T) {
	s, l := routerStart(kindREST, server.Config{})
	settingsFlood(t, s, false)
	l.want(t, "no request headers in the first")
}

// TestH2CRouterLargeFrames: 8 connections each begin a 16 MiB frame
// before any request: the router closes each at once (a client has been
// announced no more than 16 KiB) instead of holding the frame's buffer
// until HeaderTimeout.
func TestH2CRouterLargeFrames(t *testing.T) {
	s, l := routerStart(kindREST, server.Config{})
	largeFrames(t, s, 8)
	l.want(t, "frame too large")
}

// TestH2CRouterSlowHeaders: slowloris on the router: 100 connections send
// the preface and SETTINGS, then their first request's HEADERS frame one
// byte every 100 ms; the router closes each at HeaderTimeout (1 s here).
func TestH2CRouterSlowHeaders(t *testing.T) {
	s, l := routerStart(kindREST, server.Config{HeaderTimeout: time.Second})
	var head bytes.Buffer
	head.WriteString(http2.ClientPreface)
	_ = http2.NewFramer(&head, nil).WriteSettings()
	slowloris(t, s.cfg, "the first request's HEADERS after the preface", head.Bytes(), len(h2EmptySettings), func(int) string {
		var b bytes.Buffer
		c := &h2Conn{addr: "x", next: 1}
		c.enc = hpack.NewEncoder(&c.hbuf)
		c.fr = http2.NewFramer(&b, nil)
		_ = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndHeaders: true, EndStream: true,
			BlockFragment: c.restHeaders("GET", api.PathVersion, "x-slow", strings.Repeat("s", 100))})
		return b.String()
	})
	l.want(t, "i/o timeout")
}

// h2EmptySettings is the SETTINGS frame the router writes first.
var h2EmptySettings = []byte{0, 0, 0, 4, 0, 0, 0, 0, 0}
