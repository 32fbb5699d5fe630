package job

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen"
	"github.com/meteorbench/meteorbench/internal/loadgen/endpointcall"
)

// Endpoints are a run's own endpoints as its flags give them: a REST URL
// against a gRPC method, measured in the same harness as the contract.
// The zero value is none. Target checks them, then Apply loads them into
// the run's config; the messages name run's flags.
type Endpoints struct {
	RESTURL, RESTMethod, RESTBody string   // --rest-url, --rest-method, --rest-body
	Headers                       []string // --header
	GRPCAddr, GRPCMethod          string   // --grpc-addr, --grpc-method
	Schema, GRPCRequest           string   // --schema, --grpc-request
	// Changed reports whether the flag of that name was given; nil: none
	// was.
	Changed func(name string) bool
	// SchemaChecked is set where another option (--payload) checks
	// --schema given alone.
	SchemaChecked bool

	rest *endpointcall.REST // parsed by Target
}

// Given reports whether the run measures endpoints.
func (e *Endpoints) Given() bool {
	return e.RESTURL != "" || e.GRPCAddr != "" || e.GRPCMethod != ""
}

func (e *Endpoints) changed(name string) bool { return e.Changed != nil && e.Changed(name) }

// Target checks what needs no work and returns the address the run
// records as its target (the REST endpoint's, else the gRPC one's);
// without endpoints, target unchanged. Run then starts no server of its
// own.
func (e *Endpoints) Target(target string) (string, error) {
	if !e.Given() {
		for _, name := range []string{"rest-method", "rest-body", "header", "grpc-request"} {
			if e.changed(name) {
				return "", fmt.Errorf("--%s: give --rest-url or --grpc-method too", name)
			}
		}
		if e.changed("schema") && !e.SchemaChecked {
			return "", errors.New("--schema: give --grpc-method too")
		}
		return target, nil
	}
	if target != "" {
		return "", errors.New("--target and --rest-url/--grpc-method are exclusive: the endpoints name their servers")
	}
	for _, name := range []string{"scenario", "proto", "records", "compress"} {
		if e.changed(name) {
			return "", fmt.Errorf("--%s is the contract's: a run of your own endpoints measures --rest-url over rest and --grpc-method over grpc", name)
		}
	}
	if (e.GRPCAddr == "") != (e.GRPCMethod == "") {
		return "", errors.New("--grpc-addr and --grpc-method go together")
	}
	if e.RESTURL == "" {
		for _, name := range []string{"rest-method", "rest-body", "header"} {
			if e.changed(name) {
				return "", fmt.Errorf("--%s: give --rest-url too", name)
			}
		}
		return e.GRPCAddr, nil
	}
	r, err := endpointcall.ParseREST(e.RESTURL, e.RESTMethod, e.RESTBody, e.Headers)
	if err != nil {
		return "", err
	}
	e.rest = r
	return r.URL.Host, nil
}

// Apply loads the gRPC method (its .proto, or the server's reflection) and
// its request, and sets the run's endpoints, after Target. An https URL
// makes every cell TLS, as --tls does.
func (e *Endpoints) Apply(ctx context.Context, cfg *loadgen.Config) error {
	if !e.Given() {
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
			return fmt.Errorf("--tls with --rest-url %s: give its https:// URL", e.RESTURL)
		}
	}
	if e.GRPCMethod != "" {
		s := endpointcall.GRPCSpec{Addr: e.GRPCAddr, Method: e.GRPCMethod, Schema: e.Schema, Request: e.GRPCRequest, Token: cfg.Token}
		if len(cfg.TLS) > 0 {
			s.TLS = cfg.TLSConfig
		}
		g, err := endpointcall.LoadGRPC(ctx, s)
		if err != nil {
			return err
		}
		eps.GRPC = g
	} else if e.Schema != "" || e.GRPCRequest != "" {
		return errors.New("--schema and --grpc-request describe --grpc-method: give it too")
	}
	cfg.Endpoints = eps
	cfg.Protocols, cfg.Scenarios = eps.Protocols(), []api.Scenario{endpointcall.Scenario}
	return nil
}
