package session_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"slices"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
	"github.com/meteorbench/meteorbench/internal/tlsutil"
)

// tlsTarget starts a real server with a self-signed certificate and returns
// its address and a client TLS config that trusts it.
func tlsTarget(t *testing.T, allowPlaintext bool) (string, *tls.Config) {
	t.Helper()
	cert, _, err := tlsutil.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	addr := servertest.Start(t, server.Config{
		TLS:               &tls.Config{Certificates: []tls.Certificate{cert}},
		TLSAllowPlaintext: allowPlaintext,
	})
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	return addr, &tls.Config{RootCAs: pool}
}

// Every protocol and scenario over TLS, with the health check and /metrics
// over TLS too (the port serves TLS only).
func TestRunTLS(t *testing.T) {
	addr, tc := tlsTarget(t, false)
	cfg := quick(addr)
	cfg.TLS, cfg.TLSConfig = []bool{true}, tc
	cfg.Scenarios = shortScenarios(t)
	res := run(t, cfg)
	if len(res.Cells) != len(api.DefaultProtocols())*len(cfg.Scenarios) {
		t.Fatalf("%d cells", len(res.Cells))
	}
	for _, c := range res.Cells {
		if c.Errors != 0 || c.Calls != 6 || !c.TLS {
			t.Errorf("%s: %d calls, %d errors %v, TLS %v", c.Key(), c.Calls, c.Errors, c.ErrorExamples, c.TLS)
		}
		if c.TLSHandshakeUS == nil || c.TLSHandshakeUS.P50 <= 0 || c.Connections < 1 {
			t.Errorf("%s: handshake %v over %d connections", c.Key(), c.TLSHandshakeUS, c.Connections)
		}
		if c.ServerCPUUSPerCall == nil {
			t.Errorf("%s: no server CPU: /metrics not scraped over TLS? %v", c.Key(), c.Warnings)
		}
	}
}

// --tls both: each group measured plaintext, then over TLS, as two conditions.
func TestRunTLSBoth(t *testing.T) {
	addr, tc := tlsTarget(t, true)
	cfg := quick(addr)
	cfg.Scenarios = []api.Scenario{api.Small}
	cfg.TLS, cfg.TLSConfig = []bool{false, true}, tc
	res := run(t, cfg)
	var keys []string
	for _, c := range res.Cells {
		keys = append(keys, c.Key())
		if c.Errors != 0 || (c.TLSHandshakeUS != nil) != c.TLS {
			t.Errorf("%s: %d errors %v, handshake %v", c.Key(), c.Errors, c.ErrorExamples, c.TLSHandshakeUS)
		}
	}
	want := []string{"small/rest/b3/c1", "small/rest-protobuf/b3/c1", "small/grpc/b3/c1",
		"small/rest/b3/c1/tls", "small/rest-protobuf/b3/c1/tls", "small/grpc/b3/c1/tls"}
	if !slices.Equal(keys, want) {
		t.Fatalf("cells %v, want %v", keys, want)
	}
}

// A plaintext run against a TLS-only port gets no successful call (the
// server answers 400 or closes), and does not hang.
func TestRunPlaintextAgainstTLS(t *testing.T) {
	addr, _ := tlsTarget(t, false)
	cfg := quick(addr)
	cfg.Scenarios = []api.Scenario{api.Small}
	res, err := runErr(cfg)
	if res == nil {
		return // refused before measuring: fine too
	}
	for _, c := range res.Cells {
		if c.Calls != 0 || c.Errors == 0 {
			t.Errorf("%s: %d calls, %d errors; want only errors (%v)", c.Key(), c.Calls, c.Errors, err)
		}
	}
}

func runErr(cfg plan.Config) (*results.Result, error) {
	return session.Run(context.Background(), cfg)
}
