package call

import (
	"google.golang.org/grpc/codes"

	"github.com/meteorbench/meteorbench/internal/results"
)

// GRPCStatus is the error of a call that ended with gRPC status code (not
// OK), err its text: every engine classifies a status here, whoever read
// it off the wire. DeadlineExceeded is a timeout (the server may notice
// the propagated deadline before the client does); any other code is
// "grpc-<Code>". A cancellation of the call itself is Classify's to see,
// in the call's context, before this class is asked.
func GRPCStatus(code codes.Code, err error) error {
	if code == codes.DeadlineExceeded {
		return &Error{Class: results.ClassTimeout, Err: err}
	}
	return GRPCCode(code.String(), err)
}
