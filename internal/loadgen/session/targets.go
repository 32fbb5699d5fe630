package session

// Each protocol's address, asked over its own protocol: /healthz over
// HTTP/1.1 at a REST address (or the single form's one port), the
// standard grpc.health.v1 at a gRPC-only address, and nothing over
// HTTP/1.1 ever to a gRPC-only address. A target that answers the other
// HTTP version than its key says is named as such (ErrWrongProtocol).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/target"
)

// ErrWrongProtocol is the error (wrapped) of a target that speaks the
// other HTTP version than it was given as: a usage error (exit 2).
var ErrWrongProtocol = errors.New("speaks the other HTTP version")

// wrongProtocolError says which HTTP version an address speaks and how to
// give it.
type wrongProtocolError struct{ addr, speaks, key string }

func (e *wrongProtocolError) Error() string {
	return fmt.Sprintf("%s speaks %s only: give it as --target %s=%s", e.addr, e.speaks, e.key, e.addr)
}

func (e *wrongProtocolError) Unwrap() error { return ErrWrongProtocol }

// checkTargets asks every address of protocols whether it is up, each over
// its own protocol, and returns their notes (a health status other than
// healthy, a gRPC server without grpc.health.v1): warnings, not failures.
// An address that does not answer, or answers the other HTTP version, is
// an error naming it.
func (r *Session) checkTargets(ctx context.Context, protocols []api.Protocol) (notes []string, err error) {
	for _, a := range r.cfg.Addresses(protocols) {
		note, err := r.checkAddress(ctx, a)
		if err != nil {
			return notes, err
		}
		if note != "" {
			notes = append(notes, fmt.Sprintf("target %s: %s", a.Addr, note))
		}
	}
	return notes, nil
}

// checkAddress checks one address: over HTTP/1.1 when it serves REST (or
// is the single form's port), else over gRPC. A check that failed, at an
// address that answers the other HTTP version's preface, is asked once
// more before the address is said to speak only that version: a server
// that speaks both (meteorbench serve's one port) but was not up yet, or
// dropped the first connection, answers the second (a generator of a
// Docker Swarm stack, whose first ask was refused, was told its target
// spoke HTTP/2 only). A check that timed out says nothing of the version.
func (r *Session) checkAddress(ctx context.Context, a target.Address) (note string, err error) {
	check, other, speaks, key := r.checkGRPCHealth, speaksHTTP1, "HTTP/1.1", api.REST
	if a.HTTP1 {
		check = func(ctx context.Context, addr string) (string, error) {
			return checkHealth(ctx, r.health, addr, HealthTimeout)
		}
		other, speaks, key = speaksHTTP2, "HTTP/2", api.GRPC
	}
	note, err = check(ctx, a.Addr)
	timedOut := call.Classify(context.Background(), err) == results.ClassTimeout
	if err != nil && ctx.Err() == nil && !timedOut && r.speaks(ctx, a.Addr) == other {
		if note, err = check(ctx, a.Addr); err != nil && ctx.Err() == nil {
			return "", &wrongProtocolError{a.Addr, speaks, string(key)}
		}
	}
	if err != nil {
		return "", fmt.Errorf("target %s: %w", a.Addr, err)
	}
	return note, nil
}

// NoGRPCHealth is the note of a gRPC address that does not serve
// grpc.health.v1: its health is not checked, the probe calls decide.
const NoGRPCHealth = "does not serve grpc.health.v1 (Unimplemented): its health is not checked; the probe calls decide whether it serves the contract"

// checkGRPCHealth asks grpc.health.v1.Health/Check (the server as a
// whole) at addr, within HealthTimeout, over TLS when every cell is.
// SERVING is healthy; another status, or the service not served, is a
// note; no answer is an error.
func (r *Session) checkGRPCHealth(ctx context.Context, addr string) (note string, err error) {
	ctx, cancel := context.WithTimeout(ctx, HealthTimeout)
	defer cancel()
	creds := insecure.NewCredentials()
	if r.cfg.TLSOnly() {
		creds = credentials.NewTLS(r.cfg.ClientTLS(api.GRPC, ""))
	}
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return "", err
	}
	defer cc.Close()
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(false))
	switch code := status.Code(err); {
	case err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING:
		return "", nil
	case err == nil:
		return "grpc.health.v1 answered " + resp.GetStatus().String(), nil
	case code == codes.Unimplemented:
		return NoGRPCHealth, nil
	case code == codes.Unavailable || code == codes.DeadlineExceeded || code == codes.Canceled:
		return "", fmt.Errorf("unreachable over gRPC: %s", oneLine(err))
	default:
		return "grpc.health.v1: " + oneLine(err), nil
	}
}

// What an address answers to the HTTP/2 client preface.
const (
	speaksUnknown = iota
	speaksHTTP1   // an HTTP/1.x status line (HTTP/1.1 only)
	speaksHTTP2   // a SETTINGS frame (gRPC, h2c)
)

// h2Preface is the HTTP/2 client connection preface and an empty SETTINGS
// frame (RFC 9113 3.4).
var h2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")

// speaks tells, after a failed health check, which HTTP version addr
// speaks: it sends the HTTP/2 preface (never HTTP/1.1) and reads the
// first bytes of the answer. An HTTP/2 server answers with its SETTINGS
// frame; an HTTP/1.1 server with text (a 400 or 505 status line or page). Over TLS the
// answer is ALPN's to give, not guessed: unknown.
func (r *Session) speaks(ctx context.Context, addr string) int {
	if r.cfg.TLSOnly() {
		return speaksUnknown
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return speaksUnknown
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	if _, err := c.Write(h2Preface); err != nil {
		return speaksUnknown
	}
	b := make([]byte, 9)
	n, _ := io.ReadFull(c, b)
	switch b = b[:n]; {
	case n == 9 && b[3] == 0x4: // a frame header, type SETTINGS
		return speaksHTTP2
	case n > 0 && text(b):
		// A status line ("HTTP/1.1 400"), or, from servers that answer
		// an unknown version as HTTP/0.9 (Python's http.server: 505),
		// a bare HTML page.
		return speaksHTTP1
	}
	return speaksUnknown
}

// text reports whether b is printable ASCII or white space: no frame
// header starts so.
func text(b []byte) bool {
	for _, c := range b {
		if (c < 0x20 || c > 0x7e) && c != '\r' && c != '\n' && c != '\t' {
			return false
		}
	}
	return true
}

// openSamplers finds where each protocol's server CPU comes from: the
// process of --server-pid, else the /metrics of its address when that
// serves HTTP/1.1 and meteorbench's metrics. A gRPC-only address is never
// asked over HTTP/1.1: without --server-pid its CPU is not reported.
func (r *Session) openSamplers(ctx context.Context, warn func(string)) error {
	r.sides = map[api.Protocol]cpuSampler{}
	scrapers := map[string]*scraper{} // by address; nil: no usable /metrics
	for _, a := range r.cfg.Addresses(r.cfg.Protocols) {
		if !a.HTTP1 {
			continue
		}
		sc, err := r.openScraper(ctx, a.Addr) // scrape.go
		scrapers[a.Addr] = sc
		if err == nil {
			continue
		}
		if !slices.ContainsFunc(a.Protocols, func(p api.Protocol) bool { return r.cfg.ServerPID.For(p) != "" }) {
			warn(fmt.Sprintf("server CPU per call not reported: target %s has no usable /metrics (%v); give --server-pid for a server on this machine", a.Addr, err))
		}
	}
	for _, p := range r.cfg.Protocols {
		addr := r.cfg.Target.For(p)
		if addr == "" {
			continue // not served (plan.BrowserProtocol): measures nothing
		}
		sc := scrapers[addr]
		if pids := r.cfg.ServerPID.For(p); pids != "" {
			for _, pid := range pids.List() {
				if _, err := ProcCPU(pid); err != nil {
					return err
				}
			}
			r.sides[p] = &procSampler{pids: pids.List(), metrics: sc}
			continue
		}
		if sc != nil {
			r.sides[p] = sc
			continue
		}
		if _, asked := scrapers[addr]; !asked {
			warn(fmt.Sprintf("server CPU per call not reported for %s: %s is gRPC only (its /metrics, if any, is not asked over HTTP/1.1); give --server-pid for a server on this machine", p, addr))
		}
	}
	return nil
}

// closeSamplers closes the samplers' connections.
func (r *Session) closeSamplers() {
	for _, s := range r.sides {
		s.close()
	}
}

// cellTarget is the address a cell names: its protocol's, when the
// protocols have their own; "" for the single form (the run's target).
func (r *Session) cellTarget(spec plan.Spec) string {
	if !r.cfg.Target.Split() || r.cfg.Endpoints != nil {
		return ""
	}
	return r.cfg.Target.For(spec.Protocol)
}
