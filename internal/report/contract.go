package report

import (
	"fmt"
	"io"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// WriteContract renders what `meteorbench check` found: one table of the
// contract's calls and optional parts, each served or not with why, then
// one line of what a run against the target would measure.
func WriteContract(w io.Writer, c *results.Contract) error {
	ew := &errWriter{w: w}
	ew.printf("target %s\n", c.Target)
	for _, p := range api.Protocols() { // each protocol's address, when they have their own
		if addr, ok := c.Targets[string(p)]; ok {
			ew.printf("  %-14s %s\n", p, addr)
		}
	}
	ew.printf("\n")
	split := len(c.Targets) > 0
	at := func(k results.ContractCall) string {
		if !split {
			return ""
		}
		return k.Target + "\t"
	}
	tw := columns(ew)
	if split {
		fmt.Fprintf(tw, "scenario\tprotocol\tat\trequest\tanswer\n")
	} else {
		fmt.Fprintf(tw, "scenario\tprotocol\trequest\tanswer\n")
	}
	var served, not, records []string
	for _, k := range c.Calls {
		fmt.Fprintf(tw, "%s\t%s\t%s%s\t%s\n", k.Scenario, k.Protocol, at(k), k.Request, contractAnswer(k))
		name := k.Name()
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
		fmt.Fprintf(tw, "%s\t(optional)\t%s%s\t%s\n", k.Part, at(k), k.Request, contractAnswer(k))
		if name := k.Part; !k.Served {
			if k.Target != "" {
				name += " at " + k.Target
			}
			lacks = append(lacks, name)
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
