package server_test

import (
	"context"
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/meteorbench/meteorbench/api"
	pb "github.com/meteorbench/meteorbench/gen/meteorpb"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/server"
	"github.com/meteorbench/meteorbench/internal/server/servertest"
)

func TestAuth(t *testing.T) {
	const token = "tok-3f9a_Z"
	addr := servertest.Start(t, server.Config{Token: token})
	c := newClient(t, addr, "")

	rest := []struct {
		name   string
		header string // Authorization; "" for none
		want   int
	}{
		{"none", "", http.StatusUnauthorized},
		{"wrong token", "Bearer nope", http.StatusUnauthorized},
		{"token prefix", "Bearer " + token[:4], http.StatusUnauthorized},
		{"token plus more", "Bearer " + token + "x", http.StatusUnauthorized},
		{"wrong scheme", "Basic " + token, http.StatusUnauthorized},
		{"bare token", token, http.StatusUnauthorized},
		{"right", "Bearer " + token, http.StatusOK},
		{"scheme in lower case", "bearer " + token, http.StatusOK},
	}
	for _, tc := range rest {
		t.Run("REST/"+tc.name, func(t *testing.T) {
			var hdr []string
			if tc.header != "" {
				hdr = []string{"Authorization", tc.header}
			}
			for _, path := range []string{api.PathVersion, api.PathList, api.PathStream} {
				resp, body := c.do(t, http.MethodGet, path, nil, hdr...)
				wantStatus(t, resp, body, tc.want)
				if tc.want == http.StatusUnauthorized {
					wantJSONError(t, resp, body, "token")
					if resp.Header.Get("WWW-Authenticate") == "" {
						t.Error("401 without WWW-Authenticate")
					}
				}
			}
		})
	}
	t.Run("REST/exempt", func(t *testing.T) {
		for _, path := range []string{api.PathHealth, api.PathMetrics} {
			resp, body := c.do(t, http.MethodGet, path, nil)
			wantStatus(t, resp, body, http.StatusOK)
		}
	})

	grpcCases := []struct {
		name string
		md   []string
		want codes.Code
	}{
		{"none", nil, codes.Unauthenticated},
		{"wrong token", []string{"authorization", "Bearer nope"}, codes.Unauthenticated},
		{"right", []string{"authorization", "Bearer " + token}, codes.OK},
		{"second value right", []string{"authorization", "Bearer nope", "authorization", "Bearer " + token}, codes.OK},
	}
	for _, tc := range grpcCases {
		t.Run("gRPC/"+tc.name, func(t *testing.T) {
			ctx := metadata.AppendToOutgoingContext(c.ctx(t), tc.md...)
			_, err := c.grpc.GetVersion(ctx, &pb.EmptyRequest{})
			if status.Code(err) != tc.want {
				t.Errorf("GetVersion: %v, want %v", err, tc.want)
			}
			_, err = c.grpc.PostLargePayload(ctx, data.ProtoList(data.MustLandings()[:2]))
			if status.Code(err) != tc.want {
				t.Errorf("PostLargePayload: %v, want %v", err, tc.want)
			}
			stream, err := c.grpc.GetLargePayload(ctx, &pb.EmptyRequest{})
			if err == nil {
				_, err = stream.Recv()
			}
			if status.Code(err) != tc.want {
				t.Errorf("GetLargePayload: %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("gRPC/exempt", func(t *testing.T) {
		resp, err := healthpb.NewHealthClient(c.cc).Check(c.ctx(t), &healthpb.HealthCheckRequest{})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health without a token: %v, %v", resp, err)
		}
		services := listServices(t, c.ctx(t), c)
		if !services["MeteoriteLandingsService.MeteoriteLandingsService"] || !services["grpc.health.v1.Health"] {
			t.Fatalf("reflection without a token lists %v", services)
		}
	})
}

// listServices asks server reflection for the service names.
func listServices(t *testing.T, ctx context.Context, c *client) map[string]bool {
	t.Helper()
	stream, err := reflectionpb.NewServerReflectionClient(c.cc).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.CloseSend()
	out := map[string]bool{}
	for _, s := range resp.GetListServicesResponse().GetService() {
		out[s.GetName()] = true
	}
	return out
}
