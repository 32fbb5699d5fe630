package loadgentest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
)

// Misbehaviour is what a Hostile server does to a gRPC call once the
// connection has answered its good calls.
type Misbehaviour string

// The misbehaviours, each against RFC 9113 or a client's limits (grpc-go's
// defaults), and two that only stall.
const (
	// BadFrameSize sends SETTINGS_MAX_FRAME_SIZE 0 (the minimum is 16,384).
	BadFrameSize Misbehaviour = "settings-max-frame-size-0"
	// BadWindow sends SETTINGS_INITIAL_WINDOW_SIZE 2^31 (the maximum is
	// 2^31-1).
	BadWindow Misbehaviour = "settings-initial-window-2^31"
	// OversizeFrame answers with a DATA frame of 20,000 bytes, above the
	// 16,384 the client advertised.
	OversizeFrame Misbehaviour = "oversize-frame"
	// EndlessContinuation answers HEADERS without END_HEADERS, then
	// CONTINUATION frames of valid header fields, never ending the block
	// (until HostileMaxBytes or the client hangs up).
	EndlessContinuation Misbehaviour = "endless-continuation"
	// HugeHeaderList answers one header field whose value is a 20 MiB
	// string, over HEADERS and CONTINUATION frames (grpc-go's header list
	// limit is 16 MiB).
	HugeHeaderList Misbehaviour = "huge-header-list"
	// DataPastWindow answers the call's message, then goes on sending DATA
	// on its stream, ignoring the window: 5 MiB past the answer, more than
	// any window the client granted for a message already whole.
	DataPastWindow Misbehaviour = "data-past-window"
	// GoAway sends GOAWAY (NO_ERROR) with a last stream ID below the call's
	// and never answers it: the call was not processed and may be made
	// again on a new connection.
	GoAway Misbehaviour = "goaway-mid-call"
	// GoAwayError sends GOAWAY PROTOCOL_ERROR naming the call's stream as
	// processed, then closes the connection without answering it.
	GoAwayError Misbehaviour = "goaway-error-close"
	// ResetStream answers every stream with RST_STREAM INTERNAL_ERROR.
	ResetStream Misbehaviour = "rst-stream"
	// Silence reads on and never writes again on the connection.
	Silence Misbehaviour = "silence"
	// UnfinishedFrame sends a DATA frame header that says 16,384 bytes and
	// 10 bytes of it, then stalls (reading on).
	UnfinishedFrame Misbehaviour = "unfinished-frame"
	// StallContinuation answers with HEADERS (END_STREAM, no END_HEADERS)
	// and sends the CONTINUATION that ends the block only when the next
	// call's request has come, then answers that call correctly: a client
	// whose call gave up on the stalled stream must not hand the late
	// header fields to the next call.
	StallContinuation Misbehaviour = "stall-continuation"
	// StopReading reads nothing more and sends PINGs (each owing an
	// acknowledgement) until HostileMaxBytes or the client hangs up.
	StopReading Misbehaviour = "stop-reading"
	// PushEnabled sends SETTINGS_ENABLE_PUSH 1, which a server must not
	// (RFC 9113 6.5.2), and never answers the call.
	PushEnabled Misbehaviour = "settings-enable-push-1"
)

// Misbehaviours lists them all.
func Misbehaviours() []Misbehaviour {
	return []Misbehaviour{BadFrameSize, BadWindow, OversizeFrame, EndlessContinuation, HugeHeaderList,
		DataPastWindow, GoAway, GoAwayError, ResetStream, Silence, UnfinishedFrame, StallContinuation,
		StopReading, PushEnabled}
}

// HostileMaxBytes bounds what a Hostile server sends on one endless
// misbehaviour (EndlessContinuation): 64 MiB, four times grpc-go's header
// list limit.
const HostileMaxBytes = 64 << 20

// Hostile is a scripted misbehaving HTTP/2 server (x/net/http2's Framer on
// 127.0.0.1): on each connection it answers the contract's small gRPC call
// (GetVersion) correctly Good times, then misbehaves on every later call.
// It answers HTTP/1.1 GET /healthz with 200, so that a run's health checks
// pass; every other HTTP/1.1 request is a 404.
type Hostile struct {
	Addr string
	// Conns counts the HTTP/2 connections accepted; Calls the gRPC calls
	// received; Answered those answered correctly.
	Conns, Calls, Answered atomic.Int64

	do   Misbehaviour
	good int
	ln   net.Listener
	mu   sync.Mutex
	open map[net.Conn]struct{}
}

// StartHostile starts a Hostile server until the test ends.
func StartHostile(t testing.TB, do Misbehaviour, good int) *Hostile {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("loadgentest: listen: %v", err)
	}
	h := &Hostile{Addr: ln.Addr().String(), do: do, good: good, ln: ln, open: map[net.Conn]struct{}{}}
	go h.accept()
	t.Cleanup(h.Close)
	return h
}

// Close stops the server and closes its connections.
func (h *Hostile) Close() {
	h.ln.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.open {
		c.Close()
	}
}

func (h *Hostile) accept() {
	for {
		c, err := h.ln.Accept()
		if err != nil {
			return
		}
		h.mu.Lock()
		h.open[c] = struct{}{}
		h.mu.Unlock()
		go func() {
			defer func() {
				c.Close()
				h.mu.Lock()
				delete(h.open, c)
				h.mu.Unlock()
			}()
			br := bufio.NewReader(c)
			if p, err := br.Peek(len(http2.ClientPreface)); err == nil && string(p) == http2.ClientPreface {
				br.Discard(len(p))
				h.Conns.Add(1)
				h.serveH2(c, br)
				return
			}
			serveH1(c, br)
		}()
	}
}

// serveH1 answers one HTTP/1.1 request: GET /healthz 200, anything else
// 404; then it closes.
func serveH1(c net.Conn, br *bufio.Reader) {
	line, err := br.ReadString('\n')
	if err != nil {
		return
	}
	for { // the headers, up to the empty line
		l, err := br.ReadString('\n')
		if err != nil || l == "\r\n" || l == "\n" {
			break
		}
	}
	if strings.HasPrefix(line, "GET /healthz ") {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{\"status\":\"ok\"}")
		return
	}
	io.WriteString(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
}

// h2server is one HTTP/2 connection of a Hostile server.
type h2server struct {
	h       *Hostile
	c       net.Conn
	fr      *http2.Framer
	hbuf    bytes.Buffer
	henc    *hpack.Encoder
	calls   int
	silent  bool   // write nothing more
	stalled uint32 // the stream whose header block StallContinuation left open
}

func (h *Hostile) serveH2(c net.Conn, br *bufio.Reader) {
	s := &h2server{h: h, c: c, fr: http2.NewFramer(c, br)}
	s.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	s.henc = hpack.NewEncoder(&s.hbuf)
	if s.fr.WriteSettings() != nil {
		return
	}
	for {
		f, err := s.fr.ReadFrame()
		if err != nil {
			return
		}
		if s.silent {
			continue
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() && s.fr.WriteSettingsAck() != nil {
				return
			}
		case *http2.PingFrame:
			if !f.IsAck() && s.fr.WritePing(true, f.Data) != nil {
				return
			}
		case *http2.MetaHeadersFrame:
			if f.StreamEnded() && !s.call(f.StreamID) {
				return
			}
		case *http2.DataFrame:
			if f.StreamEnded() && !s.call(f.StreamID) {
				return
			}
		}
	}
}

// block encodes header fields as a header block.
func (s *h2server) block(kv ...string) []byte {
	s.hbuf.Reset()
	for i := 0; i < len(kv); i += 2 {
		s.henc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return bytes.Clone(s.hbuf.Bytes())
}

// versionAnswer is GetVersion's answer message, length-prefixed.
var versionAnswer = func() []byte {
	b, err := proto.Marshal(&pb.Version{ApiVersion: data.Version})
	if err != nil {
		panic(err)
	}
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(b))), b...)
}()

// call answers the request on stream id, whole: correctly or as the script
// says. false ends the connection.
func (s *h2server) call(id uint32) bool {
	s.h.Calls.Add(1)
	s.calls++
	fr := s.fr
	if s.stalled != 0 { // the next call came: the stalled block ends, and this call is answered
		err := fr.WriteContinuation(s.stalled, true, s.block("grpc-status", "0", "grpc-message", ""))
		s.stalled = 0
		s.h.Answered.Add(1)
		return err == nil && s.answer(id) == nil
	}
	if s.calls <= s.h.good {
		s.h.Answered.Add(1)
		return s.answer(id) == nil
	}
	head := func() error {
		return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true,
			BlockFragment: s.block(":status", "200", "content-type", "application/grpc")})
	}
	var err error
	switch s.h.do {
	case BadFrameSize:
		err = fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 0})
	case BadWindow:
		err = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 31})
	case OversizeFrame:
		if err = head(); err == nil {
			err = fr.WriteRawFrame(http2.FrameData, 0, id, make([]byte, 20000))
		}
	case EndlessContinuation:
		// One field a frame, its value raw (not Huffman-coded, not
		// indexed): cheap to decode, so that the clients' limits, not
		// their decoders, are what ends it.
		frag := literal("x-pad", strings.Repeat("~", 15900))
		err = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: s.block(":status", "200")})
		for sent := 0; err == nil && sent < HostileMaxBytes; sent += len(frag) {
			err = fr.WriteContinuation(id, false, frag)
		}
		return false
	case HugeHeaderList:
		b := hugeField()
		err = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b[:16000]})
		for b = b[16000:]; err == nil && len(b) > 0; {
			n := min(len(b), 16000)
			err = fr.WriteContinuation(id, n == len(b), b[:n])
			b = b[n:]
		}
	case DataPastWindow:
		if err = head(); err == nil {
			err = fr.WriteData(id, false, versionAnswer)
		}
		junk := make([]byte, 16000)
		for sent := 0; err == nil && sent < 5<<20; sent += len(junk) {
			err = fr.WriteData(id, false, junk)
		}
	case GoAway:
		err = fr.WriteGoAway(id-2, http2.ErrCodeNo, nil)
		s.silent = true
	case GoAwayError:
		fr.WriteGoAway(id, http2.ErrCodeProtocol, []byte("scripted"))
		return false
	case ResetStream:
		err = fr.WriteRSTStream(id, http2.ErrCodeInternal)
	case Silence:
		s.silent = true
	case StallContinuation:
		err = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndStream: true,
			BlockFragment: s.block(":status", "200", "content-type", "application/grpc")})
		s.stalled = id
	case StopReading:
		var data [8]byte
		for sent := 0; err == nil && sent < HostileMaxBytes; sent += 9 + len(data) {
			err = fr.WritePing(false, data)
		}
		return false
	case PushEnabled:
		err = fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 1})
		s.silent = true
	case UnfinishedFrame:
		if err = head(); err == nil {
			frame := binary.BigEndian.AppendUint32([]byte{0, 0x40, 0, byte(http2.FrameData), 0}, id) // 16,384 bytes, it says
			_, err = s.c.Write(append(frame, make([]byte, 10)...))
		}
		s.silent = true
	}
	return err == nil
}

// answer writes GetVersion's answer on stream id.
func (s *h2server) answer(id uint32) error {
	fr := s.fr
	err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true,
		BlockFragment: s.block(":status", "200", "content-type", "application/grpc")})
	if err == nil {
		err = fr.WriteData(id, false, versionAnswer)
	}
	if err == nil {
		err = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndHeaders: true, EndStream: true,
			BlockFragment: s.block("grpc-status", "0", "grpc-message", "")})
	}
	return err
}

// hugeField is HugeHeaderList's field, built once.
var hugeField = sync.OnceValue(func() []byte { return literal("x-huge", strings.Repeat("~", 20<<20)) })

// literal is a header field as an hpack literal without indexing, with a
// new name (RFC 7541 6.2.2), its strings raw.
func literal(name, value string) []byte {
	b := appendHpackInt([]byte{0}, 7, uint64(len(name)))
	b = append(b, name...)
	b = appendHpackInt(b, 7, uint64(len(value)))
	return append(b, value...)
}

// appendHpackInt appends n as an hpack integer with an n-bit prefix (RFC
// 7541 5.1), the prefix's other bits zero.
func appendHpackInt(b []byte, prefix uint, n uint64) []byte {
	max := uint64(1)<<prefix - 1
	if n < max {
		return append(b, byte(n))
	}
	b = append(b, byte(max))
	for n -= max; n >= 128; n >>= 7 {
		b = append(b, byte(n&0x7f|0x80))
	}
	return append(b, byte(n))
}
