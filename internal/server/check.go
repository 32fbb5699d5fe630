package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/meteorbench/meteorbench/api"
)

// Check asks the server at addr ("host:port") whether it is healthy on both
// protocols of its one port: GET /healthz must answer 200 {"status":"ok"}
// and grpc.health.v1 Check (the server as a whole) must answer SERVING. Both
// are asked at once; ctx bounds the whole check. It returns nil when healthy
// and an error naming what failed otherwise.
func Check(ctx context.Context, addr string) error { return CheckTLS(ctx, addr, nil) }

// CheckTLS is Check over TLS when tc is not nil (its NextProtos are set
// per protocol: http/1.1 for REST, h2 for gRPC, as the server routes them).
func CheckTLS(ctx context.Context, addr string, tc *tls.Config) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("check: address %q: %w", addr, err)
	}
	restc := make(chan error, 1)
	go func() { restc <- checkREST(ctx, addr, tc) }()
	grpcErr := checkGRPC(ctx, addr, tc)
	return errors.Join(<-restc, grpcErr)
}

func checkREST(ctx context.Context, addr string, tc *tls.Config) error {
	scheme := "http://"
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	if tc != nil {
		scheme = "https://"
		tr.TLSClientConfig = tc.Clone()
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+addr+api.PathHealth, nil)
	if err != nil {
		return fmt.Errorf("REST: %w", err)
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("REST: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if err != nil {
		return fmt.Errorf("REST: GET %s: reading the body: %w", api.PathHealth, err)
	}
	var h healthBody
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &h) != nil || h.Status != "ok" {
		return fmt.Errorf("REST: GET %s: %s %.100q", api.PathHealth, resp.Status, b)
	}
	return nil
}

func checkGRPC(ctx context.Context, addr string, tc *tls.Config) error {
	creds := insecure.NewCredentials()
	if tc != nil {
		creds = credentials.NewTLS(tc.Clone())
	}
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return fmt.Errorf("gRPC: %w", err)
	}
	defer cc.Close()
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(false))
	if err != nil {
		return fmt.Errorf("gRPC: health check: %w", err)
	}
	if st := resp.GetStatus(); st != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("gRPC: health check: %v", st)
	}
	return nil
}
