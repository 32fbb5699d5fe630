package main

import (
	"github.com/spf13/pflag"

	"github.com/meteorbench/meteorbench/internal/job"
)

// registerEndpoints defines run's flags for the user's own endpoints: a
// REST URL against a gRPC method, or named pairs of them from a file,
// measured in the same harness as the contract (checked and loaded by
// job.Endpoints). Their --schema is --payload's (payload.go), which says
// so.
func registerEndpoints(fl *pflag.FlagSet, e *job.Endpoints) {
	fl.StringVar(&e.File, "endpoints", "", "measure your own endpoints, named pairs of a REST request and a gRPC call, from a YAML or JSON `file` (docs/endpoints.md): a verdict per pair, or with rates (the file's, or --mix NAME=RATE,...) one mixed run of them")
	fl.StringVar(&e.RESTURL, "rest-url", "", "measure your own REST endpoint instead of the contract: http://HOST[:PORT]/PATH (https:// for TLS); the answer must be 2xx and JSON")
	fl.StringVar(&e.RESTMethod, "rest-method", "", "HTTP method of --rest-url (default GET, or POST with --rest-body)")
	fl.StringVar(&e.RESTBody, "rest-body", "", "send this `file` as the body of every --rest-url call (Content-Type application/json unless a --header says otherwise)")
	fl.StringArrayVar(&e.Headers, "header", nil, "header of every REST call of --rest-url or --endpoints, 'Key: value' (repeatable); also the gRPC calls' metadata (key in lower case), but for the transport's own headers (Content-Type, Accept, Host, grpc-*...)")
	fl.StringVar(&e.GRPCAddr, "grpc-addr", "", "host:port of your own gRPC server (with --grpc-method)")
	fl.StringVar(&e.GRPCMethod, "grpc-method", "", "measure your own gRPC method, package.Service/Method (unary or server-streaming), described by --schema or the server's reflection; the answer must be OK and decode as its type")
	fl.StringVar(&e.GRPCRequest, "grpc-request", "", "the request of every --grpc-method call, a `file` of protobuf JSON (default: the empty message)")
}
