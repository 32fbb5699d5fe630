package job

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"

	"github.com/meteorbench/meteorbench/internal/loadgen/endpointcall"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
)

// Endpoints are a run's own endpoints as its flags give them: a REST URL
// against a gRPC method, measured in the same harness as the contract.
// The zero value is none. Target checks them, then Apply loads them into
// the run's config; the messages name run's flags.
type Endpoints struct {
	File                          string   // --endpoints: named pairs, from a file
	RESTURL, RESTMethod, RESTBody string   // --rest-url, --rest-method, --rest-body
	Headers                       []string // --header (REST headers and gRPC metadata)
	GRPCAddr, GRPCMethod          string   // --grpc-addr, --grpc-method
	Schema, GRPCRequest           string   // --schema, --grpc-request
	// Changed reports whether the flag of that name was given; nil: none
	// was.
	Changed func(name string) bool
	// SchemaChecked is set where another option (--payload) checks
	// --schema given alone.
	SchemaChecked bool

	rest *endpointcall.REST // parsed by Target
	file *endpointcall.File // read by Target
}

// Given reports whether the run measures endpoints.
func (e *Endpoints) Given() bool {
	return e.File != "" || e.RESTURL != "" || e.GRPCAddr != "" || e.GRPCMethod != ""
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
		return "", errors.New("--target and --rest-url/--grpc-method/--endpoints are exclusive: the endpoints name their servers")
	}
	for _, name := range []string{"scenario", "proto", "records", "compress"} {
		if e.changed(name) {
			return "", fmt.Errorf("--%s is the contract's: a run of your own endpoints measures --rest-url over rest and --grpc-method over grpc", name)
		}
	}
	if e.File != "" {
		for _, name := range []string{"rest-url", "rest-method", "rest-body", "grpc-addr", "grpc-method", "grpc-request"} {
			if e.changed(name) {
				return "", fmt.Errorf("--%s and --endpoints are exclusive: give the pair in the file", name)
			}
		}
		f, err := endpointcall.ReadFile(endpointcall.FileSpec{Path: e.File, Schema: e.Schema, Headers: e.Headers})
		if err != nil {
			return "", err
		}
		e.file = f
		return f.Target(), nil
	}
	if (e.GRPCAddr == "") != (e.GRPCMethod == "") {
		return "", errors.New("--grpc-addr and --grpc-method go together")
	}
	if e.RESTURL == "" {
		for _, name := range []string{"rest-method", "rest-body"} { // --header is the gRPC calls' metadata too
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
func (e *Endpoints) Apply(ctx context.Context, cfg *plan.Config) error {
	if !e.Given() {
		return nil
	}
	if e.file != nil {
		some, all := e.file.HTTPS()
		if err := tlsOf(cfg, some, all, "--endpoints "+e.File); err != nil {
			return err
		}
		eps, err := e.file.Load(ctx, e.reflectionTLS(cfg), cfg.Token)
		if err != nil {
			return err
		}
		e.set(cfg, eps)
		return nil
	}
	if e.rest != nil {
		https := e.rest.URL.Scheme == "https"
		if err := tlsOf(cfg, https, https, "--rest-url "+e.RESTURL); err != nil {
			return err
		}
	}
	var g *endpointcall.GRPC
	if e.GRPCMethod != "" {
		md, err := endpointcall.Metadata(e.Headers)
		if err != nil {
			return fmt.Errorf("--header %w", err)
		}
		s := endpointcall.GRPCSpec{Addr: e.GRPCAddr, Method: e.GRPCMethod, Schema: e.Schema, Request: e.GRPCRequest,
			Metadata: md, Token: cfg.Token, TLS: e.reflectionTLS(cfg)}
		if g, err = endpointcall.LoadGRPC(ctx, s); err != nil {
			return err
		}
	} else if e.Schema != "" || e.GRPCRequest != "" {
		return errors.New("--schema and --grpc-request describe --grpc-method: give it too")
	}
	if e.rest != nil {
		e.rest.NoSchema = "no --grpc-method, whose output type's JSON mapping they would decode into"
		if g != nil {
			if e.rest.Answer = g.Output(); e.rest.Answer == nil {
				e.rest.NoSchema = "the --grpc-method's output type has no compiled codec"
			}
		}
	}
	e.set(cfg, endpointcall.Single(e.rest, g))
	return nil
}

// set makes eps the run's endpoints: a scenario per pair, over their
// protocols (unless --mix names the scenarios).
func (e *Endpoints) set(cfg *plan.Config, eps *endpointcall.Endpoints) {
	cfg.Endpoints = eps
	cfg.Protocols, cfg.Scenarios = eps.Protocols(), eps.Scenarios()
}

// reflectionTLS is the TLS config to ask a server's reflection with: the
// run's, when it is TLS.
func (e *Endpoints) reflectionTLS(cfg *plan.Config) *tls.Config {
	if len(cfg.TLS) > 0 {
		return cfg.TLSConfig
	}
	return nil
}

// tlsOf makes the run TLS when the REST URLs are https (some of them:
// all must be), as --tls does, and refuses --tls with http URLs.
func tlsOf(cfg *plan.Config, some, all bool, what string) error {
	switch {
	case some && !all:
		return fmt.Errorf("%s: some REST URLs are https, some http: a run is TLS or not", what)
	case all && len(cfg.TLS) == 0:
		cfg.TLS, cfg.TLSConfig = []bool{true}, &tls.Config{}
	case all && slices.Contains(cfg.TLS, false):
		return fmt.Errorf("--tls both: %s is TLS only (https)", what)
	case !all && len(cfg.TLS) > 0:
		return fmt.Errorf("--tls with %s: give its https:// URL", what)
	}
	return nil
}
