package lean

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/loadgentest"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
)

// serverBytes is a connection whose peer (the server) sends fixed bytes
// once the client has written its first call (its 4th write: the preface,
// SETTINGS and WINDOW_UPDATE come first), then ends (EOF); what the client
// writes vanishes.
type serverBytes struct {
	net.Conn
	r      *bytes.Reader
	mu     sync.Mutex
	writes int
	ready  chan struct{} // closed at the call's write
	closed chan struct{}
	once   sync.Once
}

func newServerBytes(b []byte) *serverBytes {
	return &serverBytes{r: bytes.NewReader(b), ready: make(chan struct{}), closed: make(chan struct{})}
}

func (c *serverBytes) Read(p []byte) (int, error) {
	select {
	case <-c.ready:
	case <-c.closed:
		return 0, net.ErrClosed
	}
	return c.r.Read(p)
}

func (c *serverBytes) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	if c.writes++; c.writes == 4 {
		close(c.ready)
	}
	return len(p), nil
}

func (c *serverBytes) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *serverBytes) SetDeadline(time.Time) error      { return nil }
func (c *serverBytes) SetReadDeadline(time.Time) error  { return nil }
func (c *serverBytes) SetWriteDeadline(time.Time) error { return nil }

// script writes a server's frames for the fuzz seeds: stream 1 is the
// client's call.
type script struct {
	bytes.Buffer
	fr   *http2.Framer
	hbuf bytes.Buffer
	henc *hpack.Encoder
}

func newScript() *script {
	s := &script{}
	s.fr = http2.NewFramer(&s.Buffer, nil)
	s.henc = hpack.NewEncoder(&s.hbuf)
	s.fr.WriteSettings()
	return s
}

func (s *script) block(kv ...string) []byte {
	s.hbuf.Reset()
	for i := 0; i < len(kv); i += 2 {
		s.henc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return bytes.Clone(s.hbuf.Bytes())
}

func (s *script) head() *script {
	s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndHeaders: true, BlockFragment: s.block(":status", "200", "content-type", "application/grpc")})
	return s
}

func (s *script) answer() *script {
	b, _ := proto.Marshal(&pb.Version{ApiVersion: data.Version})
	s.head()
	s.fr.WriteData(1, false, append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(b))), b...))
	s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndHeaders: true, EndStream: true, BlockFragment: s.block("grpc-status", "0")})
	return s
}

// FuzzH2Read: whatever bytes the server sends, the lean gRPC client's call
// ends (no panic, no hang: well within its deadline, since the bytes end
// in EOF), with a success only for an answer that is one, and any error
// of a known class. The seeds are the hostile server's misbehaviours
// (loadgentest.Hostile), written for stream 1.
func FuzzH2Read(f *testing.F) {
	f.Add(newScript().answer().Bytes())
	{
		s := newScript()
		s.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 0})
		f.Add(s.answer().Bytes())
	}
	{
		s := newScript()
		s.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 31})
		f.Add(s.answer().Bytes())
	}
	{
		s := newScript().head()
		s.fr.WriteRawFrame(http2.FrameData, 0, 1, make([]byte, 20000))
		f.Add(s.Bytes())
	}
	{
		s := newScript()
		s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: s.block(":status", "200")})
		for range 4 {
			s.fr.WriteContinuation(1, false, s.block("x-pad", "ppppppppppppppppppppp"))
		}
		s.fr.WriteContinuation(1, false, nil)
		f.Add(s.Bytes())
	}
	{
		s := newScript()
		b := []byte{0, 6}
		b = append(b, "x-huge"...)
		b = append(b, 0x7f, 0x81, 0xff, 0xff, 0x09) // a 20 MiB string, it says
		s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: append(b, "~~~~"...)})
		f.Add(s.Bytes())
	}
	{
		s := newScript().head()
		s.fr.WriteData(1, false, []byte{0, 0, 0, 0, 17})
		s.fr.WriteData(1, false, make([]byte, 16000))
		f.Add(s.Bytes())
	}
	{
		s := newScript()
		s.fr.WriteGoAway(0, http2.ErrCodeNo, nil)
		f.Add(s.Bytes())
	}
	{
		s := newScript()
		s.fr.WriteGoAway(1, http2.ErrCodeProtocol, []byte("scripted"))
		f.Add(s.Bytes())
	}
	{
		s := newScript()
		s.fr.WriteRSTStream(1, http2.ErrCodeInternal)
		f.Add(s.Bytes())
	}
	{
		s := newScript().head()
		s.Write([]byte{0, 0x40, 0, byte(http2.FrameData), 0, 0, 0, 0, 1})
		s.Write(make([]byte, 10))
		f.Add(s.Bytes())
	}
	{
		s := newScript()
		s.fr.WritePushPromise(http2.PushPromiseParam{StreamID: 1, PromiseID: 2, EndHeaders: true, BlockFragment: s.block(":path", "/")})
		f.Add(s.answer().Bytes())
	}
	{
		s := newScript()
		for range 100 {
			s.fr.WritePing(false, [8]byte{1})
		}
		f.Add(s.answer().Bytes())
	}
	f.Fuzz(func(t *testing.T, server []byte) {
		conn := newServerBytes(server)
		d := &wire.Dialer{Dial: func(context.Context, string, string) (net.Conn, error) { return conn, nil }}
		c, a := loadgentest.Open(t, New, api.GRPC, call.Options{Target: "127.0.0.1:1", Workers: 1, Dialer: d}, api.Small)
		defer c.Close()
		const deadline = 5 * time.Second
		start := time.Now()
		_, err := a.(call.DeadlineCaller).CallBy(context.Background(), start.Add(deadline))
		if took := time.Since(start); took > deadline/2 {
			t.Fatalf("the call took %v on %d bytes that end (%v)", took, len(server), err)
		}
		if err == nil {
			return
		}
		cl := call.Classify(context.Background(), err)
		_, status := cl.GRPCCode() // the server's grpc-status (4: a timeout)
		switch {
		case cl == results.ClassProtocol, cl == results.ClassInvalid, status, cl == results.ClassTimeout:
		case cl == results.ClassTransport && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)):
		default:
			t.Fatalf("error of class %q: %v", cl, err)
		}
	})
}
