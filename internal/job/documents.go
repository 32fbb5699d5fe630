package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/meteorbench/meteorbench/internal/analysis"
	"github.com/meteorbench/meteorbench/internal/merge"
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
	if err != nil {
		return nil, badDocument(ctx, path, err)
	}
	if r.Verdicts == nil {
		analysis.Apply(r)
	}
	return r, nil
}

// Stdin is the name of standard input among the paths of ReadAll.
const Stdin = "-"

// ReadAll reads and checks every result document at path, or on stdin
// for "-": one document, or JSON Lines, one document per line
// (results.ReadDocuments), such as the outputs of several load generators
// gathered from their logs. Each is named as its input ("stdin" for "-"),
// with ":LINE" when the input held several. Like Read, it
// returns as soon as ctx is cancelled and computes missing verdicts.
func ReadAll(ctx context.Context, path string, stdin io.Reader) ([]merge.Input, error) {
	return interruptible(ctx, func() ([]merge.Input, error) {
		name, rd := path, stdin
		if path == Stdin {
			name = "stdin"
		} else {
			f, err := os.Open(path)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			rd = f
		}
		docs, err := results.ReadDocuments(ctx, rd)
		if err != nil {
			var le *results.LineError
			if errors.As(err, &le) {
				// Line 1 is named as the input, as a one-line document is.
				if err = le.Err; le.Line > 1 {
					name = fmt.Sprintf("%s:%d", name, le.Line)
				}
			}
			return nil, badDocument(ctx, name, fmt.Errorf("%s: %w", name, err))
		}
		out := make([]merge.Input, len(docs))
		for i, d := range docs {
			out[i] = merge.Input{Name: name, Result: d.Result}
			if d.Line > 0 && len(docs) > 1 {
				out[i].Name = fmt.Sprintf("%s:%d", name, d.Line)
			}
			if d.Result.Verdicts == nil {
				analysis.Apply(d.Result)
			}
		}
		return out, nil
	})
}

// badDocument is err, met reading the document called name (and naming
// it), as a BadDocumentError where the document is at fault, or the file
// argument: one that does not exist, is a folder or may not be read.
func badDocument(ctx context.Context, name string, err error) error {
	var nr *results.NotResultError
	var bad *results.InvalidError
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case errors.As(err, &nr):
		return &BadDocumentError{fmt.Errorf("%s: %w", name, nr)}
	case errors.As(err, &bad), errors.Is(err, results.ErrTooLarge),
		errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EISDIR):
		return &BadDocumentError{err}
	default:
		return err
	}
}
