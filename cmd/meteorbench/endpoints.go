package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/pflag"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen"
	"github.com/meteorbench/meteorbench/internal/loadgen/endpointcall"
)

// endpointFlags are run's flags for the user's own endpoints: a REST URL
// against a gRPC method, measured in the same harness as the contract.
type endpointFlags struct {
	restURL, restMethod, restBody string
	headers                       []string
	grpcAddr, grpcMethod          string
	schema, grpcRequest           string
	rest                          *endpointcall.REST // parsed by target
}

func (e *endpointFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&e.restURL, "rest-url", "", "measure your own REST endpoint instead of the contract: http://HOST[:PORT]/PATH (https:// for TLS); the answer must be 2xx and JSON")
	fl.StringVar(&e.restMethod, "rest-method", "", "HTTP method of --rest-url (default GET, or POST with --rest-body)")
	fl.StringVar(&e.restBody, "rest-body", "", "send this `file` as the body of every --rest-url call (Content-Type application/json unless a --header says otherwise)")
	fl.StringArrayVar(&e.headers, "header", nil, "header of every --rest-url call, 'Key: value' (repeatable)")
	fl.StringVar(&e.grpcAddr, "grpc-addr", "", "host:port of your own gRPC server (with --grpc-method)")
	fl.StringVar(&e.grpcMethod, "grpc-method", "", "measure your own gRPC method, package.Service/Method (unary or server-streaming), described by --schema or the server's reflection; the answer must be OK and decode as its type")
	if fl.Lookup("schema") == nil { // --payload's (payload.go) may define it first: one flag, read in target
		fl.String("schema", "", "the .proto `file` that defines --grpc-method (parsed at run time; imports from its folder and the well-known types); default: ask the server's reflection")
	}
	fl.StringVar(&e.grpcRequest, "grpc-request", "", "the request of every --grpc-method call, a `file` of protobuf JSON (default: the empty message)")
}

// given reports whether the run measures endpoints.
func (e *endpointFlags) given() bool {
	return e.restURL != "" || e.grpcAddr != "" || e.grpcMethod != ""
}

// target checks the endpoint flags that need no work and returns the
// address the run records as its target (the REST endpoint's, else the
// gRPC one's); without endpoints, target unchanged. Run then starts no
// server of its own.
func (e *endpointFlags) target(fl *pflag.FlagSet, target string) (string, error) {
	if f := fl.Lookup("schema"); f != nil { // capacity has none
		e.schema = f.Value.String()
	}
	if !e.given() {
		for _, name := range []string{"rest-method", "rest-body", "header", "grpc-request"} {
			if fl.Changed(name) {
				return "", fmt.Errorf("--%s: give --rest-url or --grpc-method too", name)
			}
		}
		if fl.Changed("schema") && fl.Lookup("payload") == nil { // where --payload exists, its check covers --schema
			return "", errors.New("--schema: give --grpc-method too")
		}
		return target, nil
	}
	if target != "" {
		return "", errors.New("--target and --rest-url/--grpc-method are exclusive: the endpoints name their servers")
	}
	for _, name := range []string{"scenario", "proto", "records", "compress"} {
		if fl.Changed(name) {
			return "", fmt.Errorf("--%s is the contract's: a run of your own endpoints measures --rest-url over rest and --grpc-method over grpc", name)
		}
	}
	if (e.grpcAddr == "") != (e.grpcMethod == "") {
		return "", errors.New("--grpc-addr and --grpc-method go together")
	}
	if e.restURL == "" {
		for _, name := range []string{"rest-method", "rest-body", "header"} {
			if fl.Changed(name) {
				return "", fmt.Errorf("--%s: give --rest-url too", name)
			}
		}
		return e.grpcAddr, nil
	}
	r, err := endpointcall.ParseREST(e.restURL, e.restMethod, e.restBody, e.headers)
	if err != nil {
		return "", err
	}
	e.rest = r
	return r.URL.Host, nil
}

// apply loads the gRPC method (its .proto, or the server's reflection) and
// its request, and sets the run's endpoints. An https URL makes every cell
// TLS, as --tls does.
func (e *endpointFlags) apply(ctx context.Context, cfg *loadgen.Config) error {
	if !e.given() {
		return nil
	}
	eps := &endpointcall.Endpoints{REST: e.rest}
	if e.rest != nil {
		https := e.rest.URL.Scheme == "https"
		switch {
		case https && len(cfg.TLS) == 0:
			cfg.TLS, cfg.TLSConfig = []bool{true}, &tls.Config{}
		case https && slices.Contains(cfg.TLS, false):
			return errors.New("--tls both: an https --rest-url is TLS only")
		case !https && len(cfg.TLS) > 0:
			return fmt.Errorf("--tls with --rest-url %s: give its https:// URL", e.restURL)
		}
	}
	if e.grpcMethod != "" {
		s := endpointcall.GRPCSpec{Addr: e.grpcAddr, Method: e.grpcMethod, Schema: e.schema, Request: e.grpcRequest, Token: cfg.Token}
		if len(cfg.TLS) > 0 {
			s.TLS = cfg.TLSConfig
		}
		g, err := endpointcall.LoadGRPC(ctx, s)
		if err != nil {
			return err
		}
		eps.GRPC = g
	} else if e.schema != "" || e.grpcRequest != "" {
		return errors.New("--schema and --grpc-request describe --grpc-method: give it too")
	}
	cfg.Endpoints = eps
	cfg.Protocols, cfg.Scenarios = eps.Protocols(), []api.Scenario{endpointcall.Scenario}
	return nil
}
