package restcall_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/restcall"
	"github.com/meteorbench/meteorbench/internal/loadgen/wire"
	"github.com/meteorbench/meteorbench/internal/results"
)

// newClient opens a REST client, protobuf or JSON.
func newClient(t *testing.T, protobuf bool, o call.Options) call.Client {
	t.Helper()
	var c call.Client
	var err error
	if protobuf {
		c, err = restcall.NewProtobuf(o)
	} else {
		c, err = restcall.NewJSON(o)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// callOnce makes one call of a scenario against handler and classifies it.
func callOnce(t *testing.T, protobuf bool, scenario api.Scenario, handler http.HandlerFunc) (call.Outcome, results.ErrorClass) {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	opts := call.Options{Target: strings.TrimPrefix(srv.URL, "http://"), Token: "tok", Workers: 1, Dialer: &wire.Dialer{}}
	client := newClient(t, protobuf, opts)
	t.Cleanup(func() { client.Close() })
	caller, err := client.Caller(scenario)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := caller.Call(ctx)
	return out, call.Classify(ctx, err)
}

func ndjson(w http.ResponseWriter, n int) {
	w.Header().Set("Content-Type", api.TypeNDJSON)
	enc := json.NewEncoder(w)
	for _, l := range data.MustLandings()[:n] {
		enc.Encode(&l)
	}
}

func TestRESTAnswers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		protobuf bool
		scenario api.Scenario
		handler  http.HandlerFunc
		want     results.ErrorClass
	}{
		{"json stream ok", false, api.Stream, func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer tok" || r.Header.Get("Accept") != api.TypeNDJSON {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			ndjson(w, data.Count)
		}, ""},
		{"protobuf stream ok", true, api.Stream, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", api.TypeProtobuf)
			for _, l := range data.MustLandings() {
				protodelim.MarshalTo(w, l.Proto())
			}
		}, ""},
		{"protobuf stream cut inside a record", true, api.Stream, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", api.TypeProtobuf)
			b, _ := proto.Marshal(data.MustLandings()[0].Proto())
			w.Write(protowire.AppendVarint(nil, uint64(len(b))))
			w.Write(b[:len(b)/2])
		}, results.ClassInvalid},
		{"json stream without a final newline", false, api.Stream, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", api.TypeNDJSON)
			ls := data.MustLandings()
			enc := json.NewEncoder(w)
			for i := range ls[:len(ls)-1] {
				enc.Encode(&ls[i])
			}
			b, _ := json.Marshal(&ls[len(ls)-1])
			w.Write(b)
		}, ""},
		{"json small ok", false, api.Small, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			fmt.Fprintf(w, "%q\n", data.Version)
		}, ""},
		{"protobuf asked, JSON answered", true, api.Small, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", api.TypeJSON)
			fmt.Fprintf(w, "%q", data.Version)
		}, results.ClassInvalid},
		{"not JSON", false, api.Large, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", api.TypeJSON)
			w.Write([]byte("[{]"))
		}, results.ClassInvalid},
		{"trailing garbage", false, api.Small, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", api.TypeJSON)
			fmt.Fprintf(w, "%q x", data.Version)
		}, results.ClassInvalid},
		{"garbage line in a stream", false, api.Stream, func(w http.ResponseWriter, r *http.Request) {
			ndjson(w, 10)
			w.Write([]byte("{oops\n"))
		}, results.ClassInvalid},
		{"records out of order", false, api.Stream, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", api.TypeNDJSON)
			ls := data.MustLandings()
			json.NewEncoder(w).Encode(&ls[1])
		}, results.ClassInvalid},
		{"stream cut mid-way", false, api.Stream, func(w http.ResponseWriter, r *http.Request) {
			ndjson(w, 10)
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close() // chunked body never terminated
		}, results.ClassTransport},
		{"body shorter than its length", true, api.Large, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", api.TypeProtobuf)
			w.Header().Set("Content-Length", "100000")
			w.Write(make([]byte, 10))
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}, results.ClassTransport},
		{"status 413", false, api.Post, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", api.TypeJSON)
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			w.Write([]byte(`{"error":"too large"}`))
		}, "http-413"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, class := callOnce(t, tc.protobuf, tc.scenario, tc.handler)
			if class != tc.want {
				t.Errorf("class %q, want %q", class, tc.want)
			}
			if tc.want == "" && tc.scenario == api.Stream && out.FirstRecord <= 0 {
				t.Errorf("no time to first record")
			}
			if tc.want == "" && (out.LastByte <= 0 || out.Decode <= 0) {
				t.Errorf("outcome %+v: no time to last byte or decode time", out)
			}
		})
	}
}
