package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
)

// flushRecorder is a ResponseWriter that notes how many body bytes it had
// received at each Flush.
type flushRecorder struct {
	hdr     http.Header
	body    bytes.Buffer
	writes  int
	flushes []int
}

func (f *flushRecorder) Header() http.Header { return f.hdr }
func (f *flushRecorder) WriteHeader(int)     {}
func (f *flushRecorder) Write(b []byte) (int, error) {
	f.writes++
	return f.body.Write(b)
}
func (f *flushRecorder) Flush() { f.flushes = append(f.flushes, f.body.Len()) }

// firstRecordLen is the length of the first record of a stream body.
func firstRecordLen(t *testing.T, body []byte, isProto bool) int {
	t.Helper()
	if !isProto {
		return bytes.IndexByte(body, '\n') + 1
	}
	size, n := protowire.ConsumeVarint(body)
	if n < 0 {
		t.Fatal(protowire.ParseError(n))
	}
	return n + int(size)
}

// TestStreamBuffering: both REST streams flush the first record on its own
// (time to first record stays honest), then write in streamBufferSize
// pieces rather than once per record, and the body is still every record.
func TestStreamBuffering(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, isProto := range []bool{false, true} {
		t.Run(fmt.Sprintf("protobuf=%v", isProto), func(t *testing.T) {
			f := &flushRecorder{hdr: http.Header{}}
			rw := &respWriter{ResponseWriter: f}
			if isProto {
				s.rest.streamProto(rw, s.list.MeteoriteLandings)
			} else {
				s.rest.streamJSON(rw, s.landings)
			}
			body := f.body.Bytes()
			if rw.failed || len(f.flushes) == 0 {
				t.Fatalf("failed %v, %d flushes", rw.failed, len(f.flushes))
			}
			if first := firstRecordLen(t, body, isProto); f.flushes[0] != first {
				t.Errorf("first flush after %d bytes, want %d (the first record alone)", f.flushes[0], first)
			}
			// One write for the first record, then one per full buffer.
			if max := 2 + len(body)/streamBufferSize; f.writes > max || len(f.flushes) > max {
				t.Errorf("%d bytes in %d writes and %d flushes, want at most %d each", len(body), f.writes, len(f.flushes), max)
			}
			if last := f.flushes[len(f.flushes)-1]; last != len(body) {
				t.Errorf("last flush after %d of %d bytes", last, len(body))
			}
			checkStreamBody(t, body, isProto)
		})
	}
}

func checkStreamBody(t *testing.T, body []byte, isProto bool) {
	t.Helper()
	if isProto {
		var ms []*pb.MeteoriteLanding
		br := bufio.NewReader(bytes.NewReader(body))
		for {
			m := new(pb.MeteoriteLanding)
			err := protodelim.UnmarshalFrom(br, m)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("record %d: %v", len(ms), err)
			}
			ms = append(ms, m)
		}
		want := data.ProtoList(data.MustLandings()).MeteoriteLandings
		if len(ms) != len(want) {
			t.Fatalf("%d records, want %d", len(ms), len(want))
		}
		for i := range want {
			if !proto.Equal(ms[i], want[i]) {
				t.Fatalf("record %d: %v, want %v", i, ms[i], want[i])
			}
		}
		return
	}
	var ls []data.Landing
	dec := json.NewDecoder(bytes.NewReader(body))
	for dec.More() {
		var l data.Landing
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("record %d: %v", len(ls), err)
		}
		ls = append(ls, l)
	}
	want := data.MustLandings()
	if len(ls) != len(want) {
		t.Fatalf("%d records, want %d", len(ls), len(want))
	}
	for i := range want {
		got, _ := json.Marshal(ls[i])
		exp, _ := json.Marshal(want[i])
		if !bytes.Equal(got, exp) {
			t.Fatalf("record %d: %s, want %s", i, got, exp)
		}
	}
}

// TestStreamChunksOnTheWire reads the stream routes' raw HTTP/1.1 responses
// from a real server: a handful of chunks, not one per record.
func TestStreamChunksOnTheWire(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveForTest(t, s)
	for _, accept := range []string{api.TypeNDJSON, api.TypeProtobuf} {
		t.Run(accept, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", addr, hangGuard)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(hangGuard))
			fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nAccept: %s\r\nConnection: close\r\n\r\n", api.PathStream, accept)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK || len(resp.TransferEncoding) != 1 {
				t.Fatalf("%s, transfer encoding %q", resp.Status, resp.TransferEncoding)
			}
			// http.ReadResponse would hide the chunks: read them by hand.
			var body []byte
			chunks := 0
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				n, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
				if err != nil {
					t.Fatalf("chunk size line %q: %v", line, err)
				}
				if n == 0 {
					break
				}
				chunks++
				b := make([]byte, n+2)
				if _, err := io.ReadFull(br, b); err != nil {
					t.Fatal(err)
				}
				body = append(body, b[:n]...)
			}
			if max := 2 + len(body)/streamBufferSize; chunks > max {
				t.Errorf("%d bytes in %d chunks, want at most %d", len(body), chunks, max)
			}
			checkStreamBody(t, body, accept == api.TypeProtobuf)
		})
	}
}
