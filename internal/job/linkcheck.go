package job

import (
	"context"
	"fmt"
	"io"

	"github.com/meteorbench/meteorbench/internal/link"
)

// LinkCheck is `meteorbench link --check`: it makes the packet link, sets
// each of specs and measures what it delivers (link.Check), one line per
// link on w. The error says why the link is not available here, or which
// link was out of its bounds.
func LinkCheck(ctx context.Context, specs []link.Spec, o link.CheckOptions, w io.Writer) error {
	p, swept, err := link.NewPacket()
	if err != nil {
		return fmt.Errorf("packet link not available here: %w", err)
	}
	defer p.Close()
	if len(swept) > 0 {
		fmt.Fprintf(w, "removed %d namespace(s) left by killed runs: %v\n", len(swept), swept)
	}
	var bad []string
	for _, s := range specs {
		r, err := link.Check(ctx, p, s, o)
		if err != nil {
			return fmt.Errorf("link %s: %w", s, err)
		}
		fmt.Fprintln(w, r)
		if !r.OK() {
			bad = append(bad, s.String())
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("link out of its bounds: %v", bad)
	}
	return nil
}
