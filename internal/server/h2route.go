package server

// Routing an HTTP/2 connection by its first request, and any request on it.
//
// gRPC and REST (JSON or protobuf, gRPC-Web, Connect) share HTTP/2 on the
// one port: a connection whose first request is gRPC goes to the native
// grpc.Server (its own fast transport, grpc.Server.Serve), any other to the
// net/http server (h2c). On net/http's side every request is served
// whatever came first: a gRPC call of the contract's service goes to
// connect's handlers (connect.go), which speak gRPC too, and any other
// (health, reflection, the payload's service) to the same grpc.Server
// through grpc.Server.ServeHTTP (serveGRPC). Measured on one connection,
// server pinned to one CPU, 5 interleaved rounds: a small call through
// ServeHTTP took 1.33x (1.24-1.63) the server CPU of connect's and 3.0x
// (2.7-3.8) the native transport's; a 1000-record list, ServeHTTP and
// connect alike, 1.8x native. The native side cannot do the same: grpc-go's
// transport answers a request that is not gRPC itself, 415, before any
// hook of ours (tap, interceptor, unknown-service handler) sees it, and
// a connection cannot change servers once one has its HTTP/2 state
// (HPACK tables, flow-control windows, stream ids). So a connection that
// may carry both goes to net/http from its first request on: one whose
// first request bears a header a reverse proxy adds (Forwarded, Via,
// X-Forwarded-*), as Caddy, Envoy and Traefik do on the pooled
// connections they send every client's requests over (unless
// Config.ProxiedGRPCNative: the proxy keeps gRPC apart). A client that
// connects directly and opens with gRPC keeps the native transport and
// its cost; if it then sends REST on the same connection, grpc-go answers
// 415.
//
// The client preface says nothing about which, and
// stock cmux cannot wait for the headers: gRPC clients send no HEADERS
// until they have the server's SETTINGS (cmux#64), and cmux's way of
// sending SETTINGS first leaves an extra SETTINGS ACK that net/http's
// HTTP/2 server treats as a protocol error (cmux#95), while an x/net server
// that announces SETTINGS_NO_RFC7540_PRIORITIES after a bare SETTINGS
// breaks strict clients (golang/go#77947).
//
// sniffH2 therefore:
//  1. writes an empty SETTINGS frame (it changes no setting: the client
//     keeps the protocol defaults until the chosen server's own SETTINGS,
//     which is then the only one that sets anything; neither grpc-go nor
//     Go 1.26's net/http announces NO_RFC7540_PRIORITIES);
//  2. reads the client's frames (the preface, its SETTINGS, WINDOW_UPDATE,
//     PING, PRIORITY) up to the first request's HEADERS and CONTINUATION,
//     hpack-decoded with the header list bounded by Config.MaxHeaderBytes,
//     frames of at most 16 KiB (the client has been told of no more), at
//     most h2SniffBytes and within Config.HeaderTimeout;
//  3. hands the connection to the chosen server with every byte read
//     replayed, except the client's ACK of the injected SETTINGS: net/http
//     counts ACKs against the SETTINGS it sent itself, so that ACK is
//     removed, whether it came before the HEADERS (dropped from the
//     replay) or comes after (h2Conn drops the first SETTINGS ACK frame it
//     reads, then passes bytes through untouched). grpc-go ignores SETTINGS
//     ACKs, so the gRPC side gets the replay alone: after it, every read is
//     the socket's, and calls on a kept-open connection pay nothing.
//
// A connection that sends anything else before its first HEADERS (DATA, a
// RST_STREAM, a malformed frame), more than h2SniffBytes, or nothing in
// time, is closed.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/status"

	"github.com/meteorbench/meteorbench/api"
)

// h2SniffFrames bounds the frames read before the first HEADERS.
const h2SniffFrames = 64

// h2InitialMaxFrameSize is SETTINGS_MAX_FRAME_SIZE's initial value
// (RFC 9113 6.5.2), the largest frame a client may send before the
// server's SETTINGS say more; grpc-go never says more, and net/http is set
// to the same (server.go).
const h2InitialMaxFrameSize = 16 << 10

// h2EmptySettings is a SETTINGS frame with no parameters.
var h2EmptySettings = []byte{0, 0, 0, byte(http2.FrameSettings), 0, 0, 0, 0, 0}

// h2Route is where sniffH2 sends a connection.
type h2Route uint8

const (
	routeGRPC h2Route = iota // the native grpc.Server
	routeHTTP                // net/http: REST, gRPC-Web, Connect
)

// h2SniffBytes is the most read before the first request's headers: the
// header list's bound plus room for the preface, SETTINGS and the like,
// and the HPACK encoding's overhead.
func (s *Server) h2SniffBytes() int64 {
	return int64(s.cfg.MaxHeaderBytes)*2 + 16<<10
}

// routeFor says which server serves a request of this content-type: gRPC
// ("application/grpc", "application/grpc+proto", "application/grpc;...",
// any "application/grpc+<codec>") to grpc-go; everything else, gRPC-Web
// ("application/grpc-web...") included, to net/http.
func routeFor(contentType string) h2Route {
	ct := strings.ToLower(contentType)
	rest, ok := strings.CutPrefix(ct, "application/grpc")
	if !ok {
		return routeHTTP
	}
	if rest == "" || rest[0] == '+' || rest[0] == ';' {
		return routeGRPC
	}
	return routeHTTP // application/grpc-web, application/grpc-web+proto, ...
}

// proxyHeader reports whether a request header (its lower-case HTTP/2
// name) is one a reverse proxy adds to what it forwards.
func proxyHeader(name string) bool {
	switch name {
	case "forwarded", "via", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host":
		return true
	}
	return false
}

// sniffH2 reads c's first request's headers, by deadline, and returns the
// connection to hand over (the bytes read replayed) and its route. On
// error c is to be closed.
func (s *Server) sniffH2(c net.Conn, deadline time.Time) (net.Conn, h2Route, error) {
	_ = c.SetDeadline(deadline)
	if _, err := c.Write(h2EmptySettings); err != nil {
		return nil, 0, err
	}
	br := bufio.NewReaderSize(&sniffLimit{r: c, n: s.h2SniffBytes()}, 4<<10)
	var rec bytes.Buffer // what the chosen server will read first
	tee := io.TeeReader(br, &rec)
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(tee, preface); err != nil {
		return nil, 0, err
	}
	if string(preface) != http2.ClientPreface {
		return nil, 0, errors.New("not an HTTP/2 client preface")
	}
	fr := http2.NewFramer(io.Discard, tee)
	// The framer allocates a frame's buffer from its header's length
	// before reading it: unbounded, 16 MiB a connection for 9 bytes sent
	// (measured: TestH2CRouterLargeFrames). The client has seen no
	// SETTINGS but the empty one above, so it must keep to the protocol's
	// initial SETTINGS_MAX_FRAME_SIZE.
	fr.SetMaxReadFrameSize(h2InitialMaxFrameSize)
	fr.MaxHeaderListSize = uint32(s.cfg.MaxHeaderBytes)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil) // the default SETTINGS_HEADER_TABLE_SIZE
	acked := false
	for range h2SniffFrames {
		off := rec.Len()
		f, err := fr.ReadFrame()
		if err != nil {
			return nil, 0, fmt.Errorf("before the first request: %w", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() && !acked {
				// The ACK of our SETTINGS: the server to come never
				// sent it.
				rec.Truncate(off)
				acked = true
			}
		case *http2.MetaHeadersFrame:
			// A header list over the bound is cut short (Truncated):
			// its content-type, if it came before the cut, still
			// decides, and the chosen server refuses the request as it
			// would have (grpc-go RST_STREAM, net/http 431). One field
			// longer than the whole bound is an HPACK error above: a
			// close (TestH2RouterBounds).
			route, proxy := routeHTTP, false
			for _, hf := range f.Fields {
				switch {
				case hf.Name == "content-type":
					route = routeFor(hf.Value)
				case proxyHeader(hf.Name):
					proxy = true
				}
			}
			if proxy && !s.cfg.ProxiedGRPCNative {
				route = routeHTTP // a pooled connection: any request may follow
			}
			// What the reader holds beyond the HEADERS is replayed too.
			rest, _ := br.Peek(br.Buffered())
			rec.Write(rest)
			_ = c.SetDeadline(time.Time{})
			hc := &h2Conn{Conn: c, replay: rec.Bytes()}
			if route == routeHTTP && !acked {
				// The replay starts with the preface, not a frame.
				hc.dropAck, hc.pass = true, len(http2.ClientPreface)
			}
			return hc, route, nil
		case *http2.WindowUpdateFrame, *http2.PingFrame, *http2.PriorityFrame, *http2.UnknownFrame:
		default:
			return nil, 0, fmt.Errorf("HTTP/2 %v frame before the first request's headers", f.Header().Type)
		}
	}
	return nil, 0, fmt.Errorf("no request headers in the first %d HTTP/2 frames", h2SniffFrames)
}

// h2Conn is a connection handed over by sniffH2: it returns the bytes read
// while sniffing first, then the socket's. With dropAck, it drops the
// first SETTINGS ACK frame it reads (the client's ACK of the injected
// SETTINGS), parsing frame headers until then and nothing afterwards.
type h2Conn struct {
	net.Conn
	replay  []byte
	dropAck bool
	// While dropAck: the frame header to return before its payload, and
	// how much of the current frame's payload is still to pass.
	hdr     [9]byte
	pending []byte
	pass    int
}

// Read implements net.Conn.
func (c *h2Conn) Read(p []byte) (int, error) {
	if !c.dropAck && len(c.pending) == 0 && c.pass == 0 {
		if c.replay != nil {
			return c.readReplay(p), nil
		}
		return c.Conn.Read(p)
	}
	for {
		if len(c.pending) > 0 {
			n := copy(p, c.pending)
			c.pending = c.pending[n:]
			return n, nil
		}
		if c.pass > 0 {
			n, err := c.src(p[:min(len(p), c.pass)])
			c.pass -= n
			return n, err
		}
		if !c.dropAck {
			return c.src(p)
		}
		if _, err := io.ReadFull(readerFunc(c.src), c.hdr[:]); err != nil {
			return 0, err
		}
		length := int(c.hdr[0])<<16 | int(c.hdr[1])<<8 | int(c.hdr[2])
		if http2.FrameType(c.hdr[3]) == http2.FrameSettings && http2.Flags(c.hdr[4]).Has(http2.FlagSettingsAck) && length == 0 {
			c.dropAck = false
			continue
		}
		c.pending, c.pass = c.hdr[:], length
	}
}

// src reads the replay, then the socket.
func (c *h2Conn) src(p []byte) (int, error) {
	if c.replay != nil {
		return c.readReplay(p), nil
	}
	return c.Conn.Read(p)
}

// readReplay reads from the replay, and lets go of it once it is all read:
// up to h2SniffBytes (a header list of Config.MaxHeaderBytes, twice over)
// that the connection would otherwise hold for its whole life.
func (c *h2Conn) readReplay(p []byte) int {
	n := copy(p, c.replay)
	c.replay = c.replay[n:]
	if len(c.replay) == 0 {
		c.replay = nil
	}
	return n
}

// sniffLimit reads at most n bytes from r, then fails saying so.
type sniffLimit struct {
	r io.Reader
	n int64
}

func (l *sniffLimit) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errSniffLimit
	}
	n, err := l.r.Read(p[:min(int64(len(p)), l.n)])
	l.n -= int64(n)
	return n, err
}

// errSniffLimit: more than h2SniffBytes before the first request's headers.
var errSniffLimit = errors.New("too many bytes before the first request's headers")

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// serveGRPC serves a gRPC call that came on an HTTP/2 connection net/http
// serves, and that connect does not, with the one grpc.Server, through
// grpc.Server.ServeHTTP: the same services (health, reflection, the
// payload's), interceptors, counting and answers as on a native
// connection. grpc-go's tap and send budget belong
// to its native transport and do not run there, so a large call is
// admitted here as a REST call over HTTP/2 is (admitCtx): counted with
// gRPC's calls, its answer charged to its connection and to the budget up
// front, as connect's calls are; one that is refused gets
// RESOURCE_EXHAUSTED on its own stream.
func (s *Server) serveGRPC(w http.ResponseWriter, r *http.Request) {
	if m, ok := s.chargedMethod(r.URL.Path); ok && (s.token == nil || bearerIn(r.Header.Values("Authorization"), s.token)) {
		release, err := s.admitCtx(r.Context(), s.grpcHTTPCharge(m, r.Header))
		if err != nil {
			s.metrics.requests[protoGRPC][m].Inc()
			s.metrics.errors[protoGRPC][m].Inc()
			writeGRPCStatus(w, grpcBusy(err))
			return
		}
		defer release()
	}
	s.grpc.ServeHTTP(w, r)
}

// grpcHTTPCharge is what a large call served by serveGRPC is charged: its
// answer's estimate (the records asked for, as the native handlers charge
// them), or, for an upload, the call itself (its decoded message is
// charged by the interceptor). grpc-go compresses an answer when the
// request came compressed.
func (s *Server) grpcHTTPCharge(m method, h http.Header) int64 {
	gz := acceptsGzip(h["Grpc-Encoding"])
	switch m {
	case methodGetLargePayloadAsList:
		n, item := api.DefaultRecords, int64(estRecordBytes)
		if s.payload != nil {
			n, item = s.payload.Len(), int64(s.payload.ItemBytes())
		}
		if vs := h.Values(api.MetadataRecords); len(vs) == 1 {
			if v, err := parseRecordCount(vs[0]); err == nil {
				n = v
			} // else the handler answers InvalidArgument
		}
		return listCharge(int64(n)*item, gz)
	case methodGetLargePayload:
		return streamCharge(gz)
	}
	return callOverhead
}

// writeGRPCStatus answers a gRPC call with err's status and nothing else
// (a trailers-only response).
func writeGRPCStatus(w http.ResponseWriter, err error) {
	st := status.Convert(err)
	h := w.Header()
	h["Content-Type"] = []string{api.TypeGRPC}
	h["Grpc-Status"] = []string{strconv.Itoa(int(st.Code()))}
	h["Grpc-Message"] = []string{grpcPercentEncode(st.Message())}
	w.WriteHeader(http.StatusOK)
}

// grpcPercentEncode encodes a grpc-message value as the gRPC protocol says:
// bytes outside printable ASCII, and '%', as %XX.
func grpcPercentEncode(msg string) string {
	var b strings.Builder
	for i := range len(msg) {
		if c := msg[i]; c < ' ' || c > '~' || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
