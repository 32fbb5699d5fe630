package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/results"
)

// BadDocumentError is a document that is no result, too large or holds a
// bad value (results.Load): a bad argument of report, compare or merge
// rather than a failure, named with its file and, for a bad value, its
// JSON path.
type BadDocumentError struct{ Err error }

func (e *BadDocumentError) Error() string { return e.Err.Error() }
func (e *BadDocumentError) Unwrap() error { return e.Err }

// Read reads and checks a result document (results.Load: size, schema,
// every value), returning as soon as ctx is cancelled. A document written
// before verdicts existed gets them computed, so every format can show its
// summary.
func Read(ctx context.Context, path string) (*results.Result, error) {
	return interruptible(ctx, func() (*results.Result, error) { return load(ctx, path) })
}

// interruptible runs work that checks no context (decoding, analysing or
// merging a document near the size limit takes about a second of CPU) and
// returns as soon as ctx is cancelled, leaving the work to end with the
// process. Nothing it abandons writes a file.
func interruptible[T any](ctx context.Context, work func() (T, error)) (T, error) {
	type outcome struct {
		v   T
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		v, err := work()
		done <- outcome{v, err}
	}()
	select {
	case o := <-done:
		return o.v, o.err
	case <-ctx.Done():
		var zero T
		return zero, context.Cause(ctx)
	}
}

func load(ctx context.Context, path string) (*results.Result, error) {
	r, err := results.Load(ctx, path)
	var nr *results.NotResultError
	var bad *results.InvalidError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, context.Cause(ctx)
	case errors.As(err, &nr):
		return nil, &BadDocumentError{fmt.Errorf("%s: not a meteorbench result (%s)", path, notResultReason(nr.Err))}
	case errors.As(err, &bad), errors.Is(err, results.ErrTooLarge):
		return nil, &BadDocumentError{err}
	default:
		return nil, err
	}
	if r.Verdicts == nil {
		analysis.Apply(r)
	}
	return r, nil
}

// notResultReason says why a document is no result, without the package
// prefixes.
func notResultReason(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return "empty file"
	case errors.Is(err, io.ErrUnexpectedEOF),
		errors.As(err, &syntax) && syntax.Error() == "unexpected end of JSON input":
		return "truncated JSON"
	case errors.As(err, &syntax):
		return fmt.Sprintf("not JSON: %v at byte %d", syntax, syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("JSON of another shape: %v", typ)
	}
	return strings.TrimPrefix(err.Error(), "decode: ")
}
