// Package webtest starts a small server for the web protocols' client
// tests: connect-go's generic handlers for the contract's four methods
// (one handler serves gRPC, gRPC-Web and Connect), and the REST routes
// (JSON and protobuf), over HTTP/1.1 and h2c on one port (net/http's
// Protocols), or over TLS with ALPN h2 and http/1.1. It answers with the
// project's data (internal/data), and can be told to fail every call with
// a code or to answer a request with raw bytes of the test's making.
//
// It stands in for `meteorbench serve` until the server side of the web
// protocols lands (issue 32); the real server is tested on its own.
package webtest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
)

// Config says how the server misbehaves. The zero value answers correctly.
type Config struct {
	// Code, when non-zero, is the code every data method of the RPC
	// protocols fails with.
	Code connect.Code
	// Raw, when set, answers every request it returns true for itself
	// (a bad answer made by hand); the others get the normal answer.
	Raw func(w http.ResponseWriter, r *http.Request) bool
	// TLS serves over TLS (ALPN h2 and http/1.1) instead of plaintext.
	TLS bool
}

// Server is a running test server.
type Server struct {
	// Addr is the bound address, "127.0.0.1:port".
	Addr string
	// Calls counts the requests that reached a handler.
	Calls atomic.Int64
	// Proto counts the requests by HTTP major version: [1] and [2].
	Proto [3]atomic.Int64
	// TLSConfig is the client side of a TLS server (trusts its
	// certificate); nil in plaintext.
	TLSConfig *tls.Config

	srv *httptest.Server
}

// Start serves cfg on 127.0.0.1:0 until the test ends.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	s := &Server{}
	mux := http.NewServeMux()
	s.rpc(mux, cfg)
	s.rest(mux)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Calls.Add(1)
		if r.ProtoMajor == 1 || r.ProtoMajor == 2 {
			s.Proto[r.ProtoMajor].Add(1)
		}
		if cfg.Raw != nil && cfg.Raw(w, r) {
			return
		}
		mux.ServeHTTP(w, r)
	})
	srv := httptest.NewUnstartedServer(h)
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &p
	srv.Config.ReadHeaderTimeout = 5 * time.Second
	if cfg.TLS {
		srv.EnableHTTP2 = true
		srv.StartTLS()
		s.TLSConfig = &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	} else {
		srv.Start()
	}
	s.srv = srv
	s.Addr = srv.Listener.Addr().String()
	t.Cleanup(srv.Close)
	return s
}

// records is the size a request names (the meteorbench-records header,
// or ?records=), data.Count when none.
func records(h http.Header, q string) int {
	v := h.Get(api.MetadataRecords)
	if v == "" {
		v = q
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 && n <= api.MaxRecords {
		return n
	}
	return data.Count
}

func landings(n int) []data.Landing {
	ls, err := data.LandingsN(n)
	if err != nil {
		panic(err)
	}
	return ls
}

// rpc registers the four methods' connect-go handlers.
func (s *Server) rpc(mux *http.ServeMux, cfg Config) {
	fail := func() error {
		if cfg.Code != 0 {
			return connect.NewError(cfg.Code, errInjected)
		}
		return nil
	}
	opts := []connect.HandlerOption{connect.WithReadMaxBytes(128 << 20)}
	mux.Handle(pb.MeteoriteLandingsService_GetVersion_FullMethodName, connect.NewUnaryHandler(pb.MeteoriteLandingsService_GetVersion_FullMethodName,
		func(context.Context, *connect.Request[pb.EmptyRequest]) (*connect.Response[pb.Version], error) {
			if err := fail(); err != nil {
				return nil, err
			}
			return connect.NewResponse(&pb.Version{ApiVersion: data.Version}), nil
		}, opts...))
	mux.Handle(pb.MeteoriteLandingsService_GetLargePayloadAsList_FullMethodName, connect.NewUnaryHandler(pb.MeteoriteLandingsService_GetLargePayloadAsList_FullMethodName,
		func(_ context.Context, req *connect.Request[pb.EmptyRequest]) (*connect.Response[pb.MeteoriteLandingList], error) {
			if err := fail(); err != nil {
				return nil, err
			}
			return connect.NewResponse(data.ProtoList(landings(records(req.Header(), "")))), nil
		}, opts...))
	mux.Handle(pb.MeteoriteLandingsService_GetLargePayload_FullMethodName, connect.NewServerStreamHandler(pb.MeteoriteLandingsService_GetLargePayload_FullMethodName,
		func(_ context.Context, req *connect.Request[pb.EmptyRequest], st *connect.ServerStream[pb.MeteoriteLanding]) error {
			if err := fail(); err != nil {
				return err
			}
			for _, l := range landings(records(req.Header(), "")) {
				if err := st.Send(l.Proto()); err != nil {
					return err
				}
			}
			return nil
		}, opts...))
	mux.Handle(pb.MeteoriteLandingsService_PostLargePayload_FullMethodName, connect.NewUnaryHandler(pb.MeteoriteLandingsService_PostLargePayload_FullMethodName,
		func(_ context.Context, req *connect.Request[pb.MeteoriteLandingList]) (*connect.Response[pb.StatusResponse], error) {
			if err := fail(); err != nil {
				return nil, err
			}
			if len(req.Msg.GetMeteoriteLandings()) == 0 {
				return nil, connect.NewError(connect.CodeInvalidArgument, errEmpty)
			}
			return connect.NewResponse(&pb.StatusResponse{Status: data.Success}), nil
		}, opts...))
}

type constErr string

func (e constErr) Error() string { return string(e) }

const (
	errInjected = constErr("injected fault")
	errEmpty    = constErr("no records")
)

// rest registers the REST routes, JSON or protobuf by Accept.
func (s *Server) rest(mux *http.ServeMux) {
	answer := func(w http.ResponseWriter, r *http.Request, m proto.Message, v any) {
		if r.Header.Get("Accept") == api.TypeProtobuf {
			b, _ := proto.Marshal(m)
			w.Header().Set("Content-Type", api.TypeProtobuf)
			w.Write(b)
			return
		}
		w.Header().Set("Content-Type", api.TypeJSON)
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET "+api.PathVersion, func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, &pb.Version{ApiVersion: data.Version}, data.Version)
	})
	mux.HandleFunc("GET "+api.PathList, func(w http.ResponseWriter, r *http.Request) {
		ls := landings(records(nil, r.URL.Query().Get(api.QueryRecords)))
		answer(w, r, data.ProtoList(ls), ls)
	})
	mux.HandleFunc("GET "+api.PathStream, func(w http.ResponseWriter, r *http.Request) {
		ls := landings(records(nil, r.URL.Query().Get(api.QueryRecords)))
		protobuf := r.Header.Get("Accept") == api.TypeProtobuf
		if protobuf {
			w.Header().Set("Content-Type", api.TypeProtobuf)
		} else {
			w.Header().Set("Content-Type", api.TypeNDJSON)
		}
		enc := json.NewEncoder(w)
		for _, l := range ls {
			if protobuf {
				protodelim.MarshalTo(w, l.Proto())
			} else {
				enc.Encode(&l)
			}
		}
	})
	mux.HandleFunc("POST "+api.PathList, func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil || len(b) == 0 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if r.Header.Get("Content-Type") == api.TypeProtobuf {
			var list pb.MeteoriteLandingList
			if proto.Unmarshal(b, &list) != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
		} else if !json.Valid(b) {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		answer(w, r, &pb.StatusResponse{Status: data.Success}, data.Success)
	})
}

// Dial is a plain connection to the server, for tests that write by hand.
func (s *Server) Dial() (net.Conn, error) { return net.Dial("tcp", s.Addr) }

// Callers are n callers of scenario sc of c.
func Callers(c call.Client, sc api.Scenario, n int) ([]call.Caller, error) {
	callers := make([]call.Caller, n)
	for i := range callers {
		var err error
		if callers[i], err = c.Caller(sc); err != nil {
			return nil, err
		}
	}
	return callers, nil
}

// Load makes calls calls of scenario sc on each of callers at once, each
// bounded by 10 s, and returns the first failure: an error, or an outcome
// without a time to the last byte (or, when first is set, a stream's
// without a first record: the lean engine reports none).
func Load(callers []call.Caller, sc api.Scenario, calls int, first bool) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(callers)*calls)
	for _, a := range callers {
		wg.Go(func() {
			for range calls {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				out, err := a.Call(ctx)
				cancel()
				if err == nil && out.LastByte <= 0 {
					err = fmt.Errorf("outcome %+v: no time to the last byte", out)
				}
				if err == nil && first && sc == api.Stream && out.FirstRecord <= 0 {
					err = fmt.Errorf("outcome %+v: a stream without a first record", out)
				}
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
