package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/meteorbench/meteorbench/internal/loadgen/session"
	"github.com/meteorbench/meteorbench/internal/report"
)

// Check asks c.Target every call of the contract once
// (session.CheckContract) and writes what it serves to w, as a table or
// the JSON document. A target that serves nothing is an error wrapping
// session.ErrNotContract; an interrupted check, an *InterruptedError.
func Check(ctx context.Context, c CheckConfig, w io.Writer) error {
	res, err := session.CheckContract(ctx, c.Config)
	if err != nil {
		if errors.Is(err, session.ErrInterrupted) {
			return &InterruptedError{Msg: err.Error()}
		}
		return err
	}
	if c.Format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(res)
	} else {
		err = report.WriteContract(w, res)
	}
	if err != nil {
		return err
	}
	if !res.Serves() {
		hint := ""
		if len(c.TLS) == 0 {
			hint = " (asked in plaintext: a TLS server needs --tls)"
		}
		return fmt.Errorf("target %s %w%s", c.Target, session.ErrNotContract, hint)
	}
	return nil
}
