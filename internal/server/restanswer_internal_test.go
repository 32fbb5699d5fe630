package server

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/rusage"
)

func testServer(t testing.TB) *Server {
	t.Helper()
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestListAnswerBytes: the list answers written as they are encoded are
// byte for byte what encoding the whole list gives, whole (with its
// Content-Length) when they fit in a piece, chunked otherwise.
func TestListAnswerBytes(t *testing.T) {
	s := testServer(t)
	for _, n := range []int{1, batchRecords, batchRecords + 1, 1000, 3000} {
		ls, msgs, err := s.records(n)
		if err != nil {
			t.Fatal(err)
		}
		wantJSON, _ := json.Marshal(ls)
		wantJSON = append(wantJSON, '\n')
		wantProto, _ := proto.Marshal(&pb.MeteoriteLandingList{MeteoriteLandings: msgs})
		for _, tc := range []struct {
			name  string
			write func(*respWriter)
			want  []byte
		}{
			{"json", func(rw *respWriter) { writeListJSON(rw, ls, nil) }, wantJSON},
			{"protobuf", func(rw *respWriter) { writeListProto(rw, msgs, nil) }, wantProto},
		} {
			for _, gz := range []bool{false, true} {
				rec := httptest.NewRecorder()
				tc.write(&respWriter{ResponseWriter: rec, gzip: gz})
				got := rec.Body.Bytes()
				if gz {
					zr, err := gzip.NewReader(bytes.NewReader(got))
					if err != nil {
						t.Fatalf("n=%d %s gzip: %v", n, tc.name, err)
					}
					if got, err = io.ReadAll(zr); err != nil {
						t.Fatalf("n=%d %s gzip: %v", n, tc.name, err)
					}
				}
				if !bytes.Equal(got, tc.want) {
					t.Errorf("n=%d %s gzip=%v: %d bytes, not the %d of the whole encoding", n, tc.name, gz, len(got), len(tc.want))
				}
				cl := rec.Header().Get("Content-Length")
				if whole := rec.Body.Len() <= pieceSize; whole != (cl != "") {
					t.Errorf("n=%d %s gzip=%v: %d bytes sent with Content-Length %q", n, tc.name, gz, rec.Body.Len(), cl)
				}
			}
		}
	}
}

// BenchmarkListAnswer compares the server's CPU per list answer, buffered
// whole (the way answers were written before) against written as encoded,
// on a real connection read by a client that discards it. cpu-µs/op is the
// process's CPU (getrusage) per answer, client included: the client's share
// (reading and discarding the same bytes) is the same for both.
//
//	go test -run '^$' -bench ListAnswer -count 5 ./internal/server
func BenchmarkListAnswer(b *testing.B) {
	s := testServer(b)
	for _, n := range []int{1000, 100000} {
		ls, msgs, err := s.records(n)
		if err != nil {
			b.Fatal(err)
		}
		list := &pb.MeteoriteLandingList{MeteoriteLandings: msgs}
		for _, tc := range []struct {
			name string
			h    func(rw *respWriter)
		}{
			{"json/buffered", func(rw *respWriter) { writeJSON(rw, ls) }},
			{"json/streamed", func(rw *respWriter) { writeListJSON(rw, ls, nil) }},
			{"protobuf/buffered", func(rw *respWriter) { writeProto(rw, list) }},
			{"protobuf/streamed", func(rw *respWriter) { writeListProto(rw, msgs, nil) }},
		} {
			for _, gz := range []bool{false, true} {
				name := fmt.Sprintf("n=%d/%s/gzip=%v", n, tc.name, gz)
				b.Run(name, func(b *testing.B) {
					srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						tc.h(&respWriter{ResponseWriter: w, gzip: gz})
					}))
					defer srv.Close()
					c := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: time.Minute}
					b.ReportAllocs()
					cpu0 := rusage.CPU()
					var size int64
					for b.Loop() {
						resp, err := c.Get(srv.URL)
						if err != nil {
							b.Fatal(err)
						}
						size, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					b.ReportMetric(float64((rusage.CPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
					b.ReportMetric(float64(size), "respB/op")
				})
			}
		}
	}
}
