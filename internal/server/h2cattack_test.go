package server_test

// The HTTP/2 attacks of h2attack_test.go on a connection whose first
// request is REST, which the HTTP/2 router (h2route.go) hands to net/http
// over h2c instead of grpc-go: the same bystander, heap bound and
// assertions, so REST over HTTP/2 has to hold what gRPC holds.

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/server"
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
	h2Attack(t, server.Config{WriteTimeout: 2 * time.Second}, true, func(t *testing.T, addr string, h *heapSampler) string {
		var out []string
		for _, k := range []struct {
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
