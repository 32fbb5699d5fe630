package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

// rawCodec sends and receives bytes as they are, under the "proto" name, so
// a real grpc-go client can put any payload on the wire.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (rawCodec) Unmarshal(b []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), b...)
	return nil
}
func (rawCodec) Name() string   { return "proto" }
func (rawCodec) String() string { return "raw" }

// TestBadInput sends one kind of bad input per case, checks the answer, and
// then checks that the server still serves both protocols.
func TestBadInput(t *testing.T) {
	const maxBody = 1 << 20
	addr := servertest.Start(t, server.Config{MaxBody: maxBody, HeaderTimeout: time.Second})
	shared := newClient(t, addr, "")
	healthy(t, shared)

	fullJSON, err := json.Marshal(data.MustLandings())
	if err != nil {
		t.Fatal(err)
	}
	jsonCT := []string{"Content-Type", api.TypeJSON}

	// restCase posts or gets through the shared client and expects an
	// error status with a JSON body mentioning msg.
	restCase := func(method, path string, body []byte, wantCode int, msg string, hdr ...string) func(*testing.T) {
		return func(t *testing.T) {
			resp, rb := shared.do(t, method, path, body, hdr...)
			wantStatus(t, resp, rb, wantCode)
			wantJSONError(t, resp, rb, msg)
		}
	}

	cases := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"malformed JSON", restCase(http.MethodPost, api.PathList, []byte(`[{"id": 1,}]`), 400, "malformed JSON", jsonCT...)},
		{"truncated JSON", restCase(http.MethodPost, api.PathList, fullJSON[:len(fullJSON)/2], 400, "truncated", jsonCT...)},
		{"empty JSON body", restCase(http.MethodPost, api.PathList, []byte{}, 400, "truncated", jsonCT...)},
		{"JSON null", restCase(http.MethodPost, api.PathList, []byte(`null`), 400, "not null", jsonCT...)},
		{"JSON object", restCase(http.MethodPost, api.PathList, []byte(`{"id":1}`), 400, "malformed JSON", jsonCT...)},
		{"JSON wrong type", restCase(http.MethodPost, api.PathList, []byte(`[{"id":1,"mass":"21"}]`), 400, "mass", jsonCT...)},
		{"JSON bad year", restCase(http.MethodPost, api.PathList, []byte(`[{"id":1,"year":"1880"}]`), 400, "malformed JSON", jsonCT...)},
		{"JSON trailing data", restCase(http.MethodPost, api.PathList, []byte(`[] []`), 400, "after the array", jsonCT...)},
		{"wrong Content-Type", restCase(http.MethodPost, api.PathList, fullJSON, 415, "Content-Type", "Content-Type", "text/plain")},
		{"form Content-Type", restCase(http.MethodPost, api.PathList, []byte("a=b"), 415, "Content-Type", "Content-Type", "application/x-www-form-urlencoded")},
		{"bad protobuf body", restCase(http.MethodPost, api.PathList, []byte{0x0a, 0xff, 0x01, 0x02}, 400, "malformed protobuf", "Content-Type", api.TypeProtobuf)},
		{"unknown path", restCase(http.MethodGet, "/api/nope", nil, 404, "no such path")},
		{"trailing slash", restCase(http.MethodGet, api.PathVersion+"/", nil, 404, "no such path")},
		{"root", restCase(http.MethodGet, "/", nil, 404, "no such path: / (the paths: GET "+api.PathVersion+", ")},
		{"wrong method PUT", restCase(http.MethodPut, api.PathList, fullJSON, 405, "PUT")},
		{"wrong method DELETE", restCase(http.MethodDelete, api.PathVersion, nil, 405, "DELETE")},
		{"wrong method POST on the stream", restCase(http.MethodPost, api.PathStream, fullJSON, 405, "POST", jsonCT...)},
		{"PATCH as the first request on a connection", func(t *testing.T) {
			// HTTP1Fast would reset this connection; HTTP1 hands it to net/http.
			c := newClient(t, addr, "")
			for _, path := range []string{api.PathVersion, api.PathList, api.PathStream, api.PathHealth} {
				resp, rb := c.do(t, http.MethodPatch, path, []byte(`[]`), jsonCT...)
				wantStatus(t, resp, rb, 405)
				wantJSONError(t, resp, rb, "PATCH")
				if a := resp.Header.Get("Allow"); !strings.Contains(a, "GET") || strings.Contains(a, "PATCH") {
					t.Errorf("%s: Allow %q", path, a)
				}
			}
		}},
		{"too large, declared", func(t *testing.T) {
			conn := dialRaw(t, addr)
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n[",
				api.PathList, 2*maxBody)
			resp, rb := readResponse(t, conn)
			wantStatus(t, resp, rb, 413)
			wantJSONError(t, resp, rb, "limit")
		}},
		{"too large, chunked", func(t *testing.T) {
			conn := dialRaw(t, addr)
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", api.PathList)
			// Valid JSON, so the decoder reads on until the limit stops it.
			chunk := "[" + strings.Repeat(`{"id":1,"name":"x"},`, 3000)
			var wg sync.WaitGroup
			wg.Go(func() {
				for sent := 0; sent < maxBody*3/2; sent += len(chunk) {
					if _, err := fmt.Fprintf(conn, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
						return // the server closed the connection: expected
					}
					chunk = strings.Repeat(`{"id":1,"name":"x"},`, 3000)
				}
			})
			resp, rb := readResponse(t, conn)
			wantStatus(t, resp, rb, 413)
			wantJSONError(t, resp, rb, "limit")
			conn.Close()
			wg.Wait()
		}},
		{"too large protobuf, declared", func(t *testing.T) {
			conn := dialRaw(t, addr)
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
				api.PathList, api.TypeProtobuf, maxBody+1)
			resp, rb := readResponse(t, conn)
			wantStatus(t, resp, rb, 413)
		}},
		{"headers too large", func(t *testing.T) {
			// net/http answers 431 and closes; the body is delimited by the
			// close, which may arrive as a reset, so only the status is read.
			conn := dialRaw(t, addr)
			var wg sync.WaitGroup
			wg.Go(func() {
				fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", api.PathVersion, strings.Repeat("a", 100<<10))
			})
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
				t.Fatalf("%s, want 431", resp.Status)
			}
			conn.Close()
			wg.Wait()
		}},
		{"malformed HTTP/1.1", func(t *testing.T) {
			conn := dialRaw(t, addr)
			io.WriteString(conn, "GET / HTTP/1.1\r\nno colon here\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 400 {
				t.Fatalf("%s, want 400", resp.Status)
			}
		}},
		{"junk bytes", func(t *testing.T) {
			for _, junk := range []string{
				"\x00\x01\x02\x03 garbage \xff\xfe\r\n\r\n",
				"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", // a TLS ClientHello's start
				"hello\n",
				strings.Repeat("A", 5000), // a first line longer than cmux reads
			} {
				conn := dialRaw(t, addr)
				io.WriteString(conn, junk)
				if b := waitClosed(t, conn); len(b) != 0 {
					t.Errorf("junk %.20q: the server answered %.100q", junk, b)
				}
			}
		}},
		{"HTTP/2 preface then junk", func(t *testing.T) {
			conn := dialRaw(t, addr)
			io.WriteString(conn, http2.ClientPreface+strings.Repeat("\xde\xad\xbe\xef", 64))
			waitClosed(t, conn) // grpc-go may send SETTINGS/GOAWAY first
		}},
		{"HTTP/2 preface then silence", func(t *testing.T) {
			conn := dialRaw(t, addr)
			io.WriteString(conn, http2.ClientPreface)
			waitClosed(t, conn)
		}},
		{"request line then silence", func(t *testing.T) {
			conn := dialRaw(t, addr)
			io.WriteString(conn, "GET "+api.PathVersion+" HTTP/1.1\r\nHost: x\r\n")
			waitClosed(t, conn)
		}},
		{"100 silent connections", func(t *testing.T) {
			conns := make([]net.Conn, 100)
			for i := range conns {
				conns[i] = dialRaw(t, addr)
			}
			// While all of them are held open, the port still serves.
			healthy(t, shared)
			for _, conn := range conns {
				if b := waitClosed(t, conn); len(b) != 0 {
					t.Fatalf("a silent connection got %.100q", b)
				}
			}
		}},
		{"REST over HTTP/2 without TLS", func(t *testing.T) {
			// Prior-knowledge h2c is routed by content-type: a REST
			// request reaches the REST handler (h2route.go).
			var p http.Protocols
			p.SetUnencryptedHTTP2(true)
			tr := &http.Transport{Protocols: &p}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr, Timeout: hangGuard}).Get("http://" + addr + api.PathVersion)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
				t.Fatalf("%s %s, want HTTP/2 200", resp.Proto, resp.Status)
			}
		}},
		{"garbage gRPC message", func(t *testing.T) {
			var out []byte
			for _, garbage := range [][]byte{
				{0x0a, 0xff, 0x01, 0x02},       // field 1, length 255, 2 bytes follow
				{0xff, 0xff, 0xff, 0xff},       // an unterminated tag
				{0x0a, 0x03, 0x08, 0x80, 0x80}, // a record with a truncated varint
			} {
				err := shared.cc.Invoke(shared.ctx(t), pb.MeteoriteLandingsService_PostLargePayload_FullMethodName,
					garbage, &out, grpc.ForceCodec(rawCodec{}))
				// The server's codec notes the failure and the interceptor
				// answers InvalidArgument (grpc-go alone says Internal).
				if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "malformed protobuf") {
					t.Errorf("garbage %x: %v, want InvalidArgument (malformed protobuf)", garbage, err)
				}
			}
		}},
		{"too large gRPC message", func(t *testing.T) {
			list := data.ProtoList(data.MustLandings()[:1])
			list.MeteoriteLandings[0].Name = strings.Repeat("n", maxBody)
			_, err := shared.grpc.PostLargePayload(shared.ctx(t), list)
			if status.Code(err) != codes.ResourceExhausted {
				t.Fatalf("%v, want ResourceExhausted", err)
			}
		}},
		{"invalid timestamp over gRPC", func(t *testing.T) {
			list := data.ProtoList(data.MustLandings()[:2])
			list.MeteoriteLandings[1].Year.Seconds = -1 << 50
			_, err := shared.grpc.PostLargePayload(shared.ctx(t), list)
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("%v, want InvalidArgument", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t)
			healthy(t, shared)
		})
	}
	// And everything still works in full.
	resp, body := shared.do(t, http.MethodGet, api.PathList, nil)
	wantStatus(t, resp, body, http.StatusOK)
	checkJSONLandings(t, "after the bad input", body)
}
