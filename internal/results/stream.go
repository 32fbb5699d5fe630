package results

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxStreamDocuments bounds the documents ReadDocuments reads from one
// stream, each at most MaxDocumentSize: far more load generators than
// one run has.
const MaxStreamDocuments = 1024

// Document is one result document of a stream and the line it was on (0
// when the stream was one document in any layout).
type Document struct {
	Line   int
	Result *Result
}

// LineError is what was wrong with the document on one line of a stream
// of JSON Lines.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ReadDocuments reads the result documents of rd: one document in any
// JSON layout (what --format json writes), or JSON Lines, one document per
// line (--format jsonl, WriteLine): several load generators' documents
// gathered from their logs. The first line that is not blank decides: a
// line that is a whole JSON value on its own starts JSON Lines, where
// blank lines are skipped and every other line must be a document. Each
// document is read and checked as ReadLimited does (size, shape, schema,
// every value); an error of a line is a *LineError naming it.
func ReadDocuments(ctx context.Context, rd io.Reader) ([]Document, error) {
	br := bufio.NewReaderSize(ctxReader{ctx, rd}, 64<<10)
	var (
		head   bytes.Buffer // what was read before the first line that is not blank
		first  []byte
		line   int
		err    error
		atEOF  bool
		blanks = true
	)
	for blanks && !atEOF {
		line++
		first, err = readLine(br, MaxDocumentSize)
		switch {
		case errors.Is(err, io.EOF):
			atEOF = true
		case err != nil:
			return nil, err
		}
		head.Write(first)
		head.WriteByte('\n')
		blanks = len(bytes.TrimSpace(first)) == 0
	}
	if blanks || !json.Valid(first) {
		// One document, however it is laid out.
		r, err := ReadLimited(ctx, io.MultiReader(&head, br))
		if err != nil {
			return nil, err
		}
		return []Document{{Result: r}}, nil
	}
	var docs []Document
	for {
		if len(bytes.TrimSpace(first)) > 0 {
			if len(docs) == MaxStreamDocuments {
				return nil, &LineError{line, fmt.Errorf("more than %d documents in one stream", MaxStreamDocuments)}
			}
			r, err := ReadLimited(ctx, bytes.NewReader(first))
			if err != nil {
				return nil, &LineError{line, err}
			}
			docs = append(docs, Document{Line: line, Result: r})
		}
		if atEOF {
			return docs, nil
		}
		line++
		first, err = readLine(br, MaxDocumentSize)
		switch {
		case errors.Is(err, io.EOF):
			atEOF = true
		case errors.Is(err, ErrTooLarge):
			return nil, &LineError{line, err}
		case err != nil:
			return nil, err
		}
	}
}

// readLine reads one line of br without its newline, refusing one longer
// than limit (ErrTooLarge). At the end of br it returns what is left of
// the last line and io.EOF.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(out)+len(chunk) > limit+1 {
			return nil, ErrTooLarge
		}
		out = append(out, chunk...)
		switch {
		case err == nil:
			return bytes.TrimSuffix(out, []byte{'\n'}), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return out, err
		}
	}
}
