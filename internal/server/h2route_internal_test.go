package server

import "testing"

func TestRouteFor(t *testing.T) {
	for ct, want := range map[string]h2Route{
		"application/grpc":                      routeGRPC,
		"application/grpc+proto":                routeGRPC,
		"application/grpc+json":                 routeGRPC,
		"application/grpc;charset=utf-8":        routeGRPC,
		"Application/GRPC":                      routeGRPC,
		"application/grpc-web":                  routeHTTP,
		"application/grpc-web+proto":            routeHTTP,
		"application/grpc-web-text":             routeHTTP,
		"application/grpcx":                     routeHTTP,
		"application/json":                      routeHTTP,
		"application/x-protobuf":                routeHTTP,
		"application/proto":                     routeHTTP,
		"application/connect+proto":             routeHTTP,
		"":                                      routeHTTP,
		"text/plain; a=application/grpc":        routeHTTP,
		"application/grpc-web+proto; charset=x": routeHTTP,
	} {
		if got := routeFor(ct); got != want {
			t.Errorf("routeFor(%q) = %v, want %v", ct, got, want)
		}
	}
}
