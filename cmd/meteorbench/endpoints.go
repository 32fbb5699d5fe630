package main

import (
	"github.com/spf13/pflag"

	"github.com/meteorbench/meteorbench/internal/job"
)

// endpointFlags are run's flags for the user's own endpoints: a REST URL
// against a gRPC method, measured in the same harness as the contract
// (checked and loaded by job.Endpoints).
type endpointFlags struct{ job.Endpoints }

func (e *endpointFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&e.RESTURL, "rest-url", "", "measure your own REST endpoint instead of the contract: http://HOST[:PORT]/PATH (https:// for TLS); the answer must be 2xx and JSON")
	fl.StringVar(&e.RESTMethod, "rest-method", "", "HTTP method of --rest-url (default GET, or POST with --rest-body)")
	fl.StringVar(&e.RESTBody, "rest-body", "", "send this `file` as the body of every --rest-url call (Content-Type application/json unless a --header says otherwise)")
	fl.StringArrayVar(&e.Headers, "header", nil, "header of every --rest-url call, 'Key: value' (repeatable)")
	fl.StringVar(&e.GRPCAddr, "grpc-addr", "", "host:port of your own gRPC server (with --grpc-method)")
	fl.StringVar(&e.GRPCMethod, "grpc-method", "", "measure your own gRPC method, package.Service/Method (unary or server-streaming), described by --schema or the server's reflection; the answer must be OK and decode as its type")
	if fl.Lookup("schema") == nil { // --payload's (payload.go) may define it first: one flag, read in target
		fl.String("schema", "", "the .proto `file` that defines --grpc-method (parsed at run time; imports from its folder and the well-known types); default: ask the server's reflection")
	}
	fl.StringVar(&e.GRPCRequest, "grpc-request", "", "the request of every --grpc-method call, a `file` of protobuf JSON (default: the empty message)")
}

// target reads the flags job.Endpoints checks and returns the run's target
// (Endpoints.Target).
func (e *endpointFlags) target(fl *pflag.FlagSet, target string) (string, error) {
	if f := fl.Lookup("schema"); f != nil { // capacity has none
		e.Schema = f.Value.String()
	}
	e.Changed, e.SchemaChecked = fl.Changed, fl.Lookup("payload") != nil // where --payload exists, its check covers --schema
	return e.Target(target)
}
