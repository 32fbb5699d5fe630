package report

import (
	"fmt"
	"io"

	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// WriteContract renders what `meteorbench check` found: one table of the
// contract's calls and optional parts, each served or not with why, then
// one line of what a run against the target would measure.
func WriteContract(w io.Writer, c *results.Contract) error {
	ew := &errWriter{w: w}
	ew.printf("target %s\n\n", c.Target)
	tw := columns(ew)
	fmt.Fprintf(tw, "scenario\tprotocol\trequest\tanswer\n")
	var served, not, records []string
	for _, k := range c.Calls {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.Scenario, k.Protocol, k.Request, contractAnswer(k))
		name := string(k.Scenario) + " " + string(k.Protocol)
		if k.Records != 0 { // the records asked for: a condition of the call, not a cell
			if !k.Served {
				records = append(records, name)
			}
			continue
		}
		if k.Served {
			served = append(served, name)
		} else {
			not = append(not, name)
		}
	}
	var lacks []string
	for _, k := range c.Optional {
		fmt.Fprintf(tw, "%s\t(optional)\t%s\t%s\n", k.Part, k.Request, contractAnswer(k))
		if !k.Served {
			lacks = append(lacks, k.Part)
		}
	}
	tw.Flush()
	ew.printf("\nserves %d of %d: %s\n", len(served), len(served)+len(not), orNone(served))
	if len(not) > 0 {
		ew.printf("not served (run marks them, measures the rest): %s\n", format.Names(not))
	}
	if len(records) > 0 {
		ew.printf("ignores the records asked for (run --records does not measure these): %s\n", format.Names(records))
	}
	if len(lacks) > 0 {
		ew.printf("lacks (optional): %s\n", format.Names(lacks))
	}
	return ew.err
}

// contractAnswer is "ok", or "NO: why".
func contractAnswer(k results.ContractCall) string {
	if k.Served {
		return "ok"
	}
	return "NO: " + k.Why
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "nothing"
	}
	return format.Names(names)
}
