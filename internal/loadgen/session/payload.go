package session

// The payload's side of the plan: a cell's condition names the payload,
// and a target serving another payload than the run's is refused before
// any cell, instead of every call failing to decode.

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/meteorbench/meteorbench/api"
)

// ErrOtherPayload is the error (wrapped) of a target that serves another
// payload than the run measures.
var ErrOtherPayload = fmt.Errorf("serves another payload")

// probePayload asks the target which payload it serves (api.HeaderPayload
// on its /healthz answer, which counts no call) and refuses one that is
// not the run's. A target without /healthz is left to the contract probe.
func (r *Session) probePayload(ctx context.Context) error {
	addr := r.cfg.Target.For(api.REST)
	if addr == "" || r.cfg.Endpoints != nil {
		return nil // the user's own endpoints, or a gRPC-only target: left to the probe
	}
	spec := r.cfg.Specs()[0]
	spec.Protocol = api.REST
	tr := &http.Transport{DialContext: r.dialer(spec).DialContext, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, HealthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+api.PathHealth, nil)
	if err != nil {
		return nil
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	served, want := resp.Header.Get(api.HeaderPayload), r.cfg.PayloadID()
	if served == want {
		return nil
	}
	return fmt.Errorf("target %s %w: it serves %s, this run measures %s (run with the --payload, --schema and --message the server was given)",
		addr, ErrOtherPayload, payloadName(served), payloadName(want))
}

func payloadName(id string) string {
	if id == "" {
		return "the meteorites (no --payload)"
	}
	return "payload " + id
}
