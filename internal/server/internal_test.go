package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/tcptest"
)

const hangGuard = 20 * time.Second

// serveForTest serves s on loopback until the test ends.
func serveForTest(t *testing.T, s *Server) string {
	t.Helper()
	return tcptest.Loopback(t, "Serve", s.Serve)
}

// TestPanicRecovery: a handler that panics costs its own call only: REST
// answers 500 with a JSON error, gRPC answers Internal, both are counted as
// errors, and the server goes on serving.
func TestPanicRecovery(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	s.panicHook = func() { panic("boom") }
	addr := serveForTest(t, s)

	for _, accept := range []string{"", api.TypeProtobuf} {
		for _, path := range []string{api.PathVersion, api.PathList, api.PathStream} {
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
			if accept != "" {
				req.Header.Set("Accept", accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e errorBody
			if resp.StatusCode != http.StatusInternalServerError || json.Unmarshal(body, &e) != nil || e.Error == "" ||
				resp.Header.Get("Content-Type") != api.TypeJSON {
				t.Fatalf("GET %s after a panic: %s %s %q", path, resp.Status, resp.Header.Get("Content-Type"), body)
			}
		}
	}

	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	c := pb.NewMeteoriteLandingsServiceClient(cc)
	if _, err := c.GetVersion(ctx, &pb.EmptyRequest{}); status.Code(err) != codes.Internal {
		t.Errorf("unary call after a panic: %v, want Internal", err)
	}
	stream, err := c.GetLargePayload(ctx, &pb.EmptyRequest{})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.Internal {
		t.Errorf("streaming call after a panic: %v, want Internal", err)
	}

	for p, ms := range map[protocol][]method{
		protoREST:         {methodGetVersion, methodGetLargePayloadAsList, methodGetLargePayload},
		protoRESTProtobuf: {methodGetVersion, methodGetLargePayloadAsList, methodGetLargePayload},
		protoGRPC:         {methodGetVersion, methodGetLargePayload},
	} {
		for _, m := range ms {
			if got := counterValue(t, s.metrics.errors[p][m]); got != 1 {
				t.Errorf("errors{%s,%s} = %v, want 1", protocolNames[p], methodNames[m], got)
			}
		}
	}

	// Still serving: the non-data routes never reach the hook.
	resp, err := http.Get("http://" + addr + api.PathHealth)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz after the panics: %s", resp.Status)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestAcceptPref(t *testing.T) {
	for _, tc := range []struct {
		accept []string
		want   pref
	}{
		{nil, prefNone},
		{[]string{""}, prefNone},
		{[]string{"*/*"}, prefNone},
		{[]string{"application/json"}, prefJSON},
		{[]string{"application/x-ndjson"}, prefJSON},
		{[]string{"application/x-protobuf"}, prefProto},
		{[]string{"application/protobuf"}, prefProto},
		{[]string{"Application/X-Protobuf"}, prefProto},
		{[]string{"application/x-protobuf, application/json"}, prefJSON}, // a tie: JSON, the default
		{[]string{"application/json;q=0.5, application/x-protobuf"}, prefProto},
		{[]string{"application/x-protobuf;q=0.9", "application/json;q=0.8"}, prefProto},
		{[]string{"application/x-protobuf;q=0.1, application/json"}, prefJSON},
		{[]string{"application/x-protobuf;q=0"}, prefJSON},
		{[]string{"text/html,application/xhtml+xml,*/*;q=0.8"}, prefNone},
		{[]string{"application/x-protobuf ; q=1.0 , */*;q=0.1"}, prefProto},
		{[]string{"application/x-protobuf;q=bogus"}, prefProto},
	} {
		if got := acceptPref(tc.accept); got != tc.want {
			t.Errorf("acceptPref(%q) = %v, want %v", tc.accept, got, tc.want)
		}
	}
}

func TestBearerMatches(t *testing.T) {
	tok := []byte("abc")
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"Bearer abc", true}, {"bearer abc", true}, {"BEARER abc", true}, {"Bearer  abc ", true},
		{"Bearer ab", false}, {"Bearer abcd", false}, {"Bearer", false}, {"", false},
		{"Basic abc", false}, {"abc", false}, {"Bearerabc", false},
	} {
		if got := bearerMatches(tc.v, tok); got != tc.want {
			t.Errorf("bearerMatches(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []Config{
		{Token: "has space"},
		{Token: "tab\t"},
		{Token: "naïve"},
		{MaxBody: -1},
		{MaxBody: 2 << 30},
		{MaxHeaderBytes: -1},
		{HeaderTimeout: -time.Second},
		{ReadTimeout: -1},
		{WriteTimeout: -1},
		{IdleTimeout: -1},
		{ShutdownTimeout: -1},
	}
	for _, c := range bad {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", c)
		}
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
	good := []Config{{}, {Token: "A-z_0.9~!"}, {MaxBody: 1}, {MaxBody: 1 << 30}}
	for _, c := range good {
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", c, err)
		}
	}
	d := Config{}.withDefaults()
	if d.MaxBody != DefaultMaxBody || d.ShutdownTimeout != DefaultShutdownTimeout || d.ShutdownTimeout >= 10*time.Second ||
		d.HeaderTimeout != DefaultHeaderTimeout || d.Logger == nil || d.MaxConcurrentStreams != DefaultMaxConcurrentStreams {
		t.Errorf("defaults: %+v", d)
	}
}

// TestDecodeLandingsJSONRoundTrip: the full data set, encoded as the server
// encodes it, decodes back to itself.
func TestDecodeLandingsJSONRoundTrip(t *testing.T) {
	b, err := json.Marshal(data.MustLandings())
	if err != nil {
		t.Fatal(err)
	}
	ls, err := decodeLandingsJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(ls)
	if !bytes.Equal(b, b2) {
		t.Fatal("the data set does not survive a JSON round trip")
	}
	// Reading errors come back unchanged, reachable with errors.As.
	_, err = decodeLandingsJSON(http.MaxBytesReader(nil, io.NopCloser(bytes.NewReader(b)), 100))
	var mbe *http.MaxBytesError
	if !errors.As(err, &mbe) {
		t.Fatalf("over the limit: %v, want a *http.MaxBytesError", err)
	}
	if _, err := decodeLandingsJSON(strings.NewReader("[]")); err != nil {
		t.Fatalf("empty array: %v", err)
	}
}
