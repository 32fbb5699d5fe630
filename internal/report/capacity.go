package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/format"
	"github.com/meteorbench/meteorbench/internal/results"
)

// This file renders a capacity document (r.Capacity, written by
// `meteorbench capacity`): after the summary, one section per scenario and
// condition with a table of the series (protocol, found rate, searches and
// their range, bracket, boundary probes held, how the search ended), then
// each series' probes, per search when the search was repeated.

// A capSection is one scenario and condition of a capacity document: its
// series, one per protocol, in the document's order.
type capSection struct {
	Scenario  api.Scenario
	Condition results.Condition
	Objective string
	Series    []*results.Capacity
}

// title names the section: "Small · p99<=50ms · server on 1 CPU · workers
// follow the rate".
func (s *capSection) title() string {
	t := s.Scenario.Title() + " · " + s.Objective
	if f := s.Condition.Features(); f != "" {
		t += " · " + f
	}
	if n := s.Condition.Concurrency; n > 0 {
		t += " · " + strconv.Itoa(n) + " workers"
	} else {
		t += " · workers follow the rate"
	}
	return t
}

// capSections groups r.Capacity by scenario, condition and objective.
func capSections(r *results.Result) []*capSection {
	var out []*capSection
	for i := range r.Capacity {
		c := &r.Capacity[i]
		var s *capSection
		for _, o := range out {
			if o.Scenario == c.Scenario && o.Condition == c.Condition && o.Objective == c.Objective {
				s = o
			}
		}
		if s == nil {
			s = &capSection{Scenario: c.Scenario, Condition: c.Condition, Objective: c.Objective}
			out = append(out, s)
		}
		s.Series = append(s.Series, c)
	}
	return out
}

// capSeriesHeader are the columns of a section's series table.
var capSeriesHeader = []string{"protocol", "found", "searches [min, max]", "bracket [lo, hi]", "boundary held", "workers", "search"}

// capSeriesRow is one series' row: "9,800 calls/s", "1", "[9,500,
// 10,100]", "3 of 3", "complete"; repeated, "9,800 calls/s (median)", "3
// [9,500, 10,300]".
func capSeriesRow(c *results.Capacity) []string {
	return []string{string(c.Protocol), capFound(c), capSearches(c), capBracket(c), capHeld(c), capWorkers(c), capEnd(c)}
}

// capSearches is the number of searches and, when several found rates,
// their range: "1", "3 [9,500, 10,300]".
func capSearches(c *results.Capacity) string {
	n := strconv.Itoa(c.Repeated())
	if len(c.Searches) > 1 && c.RateMax > 0 {
		n += " [" + format.Rate(c.RateMin) + ", " + format.Rate(c.RateMax) + "]"
	}
	return n
}

// capFound is the found rate: "9,800 calls/s"; a series that is
// generator-bound or saw no rate fail only gives a lower bound ("≥ 3,200
// calls/s").
func capFound(c *results.Capacity) string {
	switch {
	case c.Failure != "":
		return "failed"
	case c.Rate == 0:
		return "none"
	case c.LowerBound():
		return "≥ " + format.Rate(c.Rate) + " calls/s" + capMedian(c)
	}
	return format.Rate(c.Rate) + " calls/s" + capMedian(c)
}

// capMedian marks a found rate that is the median of several searches.
func capMedian(c *results.Capacity) string {
	if len(c.Searches) > 1 {
		return " (median)"
	}
	return ""
}

// capBracket is "[lo, hi]", hi "–" when no rate failed.
func capBracket(c *results.Capacity) string {
	if c.Lo == 0 && c.Hi == 0 {
		return "–"
	}
	hi := "–"
	if c.Hi > 0 {
		hi = format.Rate(c.Hi)
	}
	return "[" + format.Rate(c.Lo) + ", " + hi + "]"
}

func capHeld(c *results.Capacity) string {
	if c.Boundary == 0 {
		return "–"
	}
	return fmt.Sprintf("%d of %d", c.Held, c.Boundary)
}

// capWorkers is the workers of the probes at the found rate, for a check
// with run --concurrency.
func capWorkers(c *results.Capacity) string {
	if c.Workers == 0 {
		return "–"
	}
	return strconv.Itoa(c.Workers)
}

// capEnd says how the search ended: "complete", or why it stopped.
func capEnd(c *results.Capacity) string {
	switch {
	case c.Failure != "":
		return c.Failure
	case c.GeneratorBound > 0:
		return "generator-bound at " + format.Rate(c.GeneratorBound) + " calls/s"
	case c.Complete && c.Note != "":
		return "complete (" + c.Note + ")"
	case c.Complete:
		return "complete"
	case c.Note != "":
		return c.Note
	}
	return "stopped"
}

// capPct names the objective's percentile: "p99".
// capTerms is the objective a probe passed by, in full: "p99<=50ms,
// errors ≤ 0.1%, achieved ≥ 99% of offered".
func capTerms(o results.CapacityObjective) string {
	return fmt.Sprintf("%s, errors ≤ %s, achieved ≥ 99%% of offered", o.Objective, format.Percent(o.MaxErrors))
}

func capPct(c *results.Capacity) string { return "p" + strconv.FormatFloat(c.Percentile, 'g', -1, 64) }

// capProbeHeader are the columns of a series' probe table.
func capProbeHeader(c *results.Capacity) []string {
	return []string{"#", "phase", "offered", "achieved", "p50", capPct(c), "errors", "verdict", "why"}
}

// capRun is one search of a series as its probe table shows it: the
// search's probes and, when the search was repeated, which search.
type capRun struct {
	Title  string // "rest probes", "rest probes, search 2 of 3: 9,800 calls/s"
	Probes []results.CapacityProbe
}

// capRuns are a series' searches, one with the series' own probes when
// not repeated.
func capRuns(c *results.Capacity) []capRun {
	name := string(c.Protocol) + " probes"
	if len(c.Searches) == 0 {
		return []capRun{{Title: name, Probes: c.Probes}}
	}
	var out []capRun
	for i := range c.Searches {
		s := &c.Searches[i]
		sc := results.Capacity{Protocol: c.Protocol, CapacitySearch: *s}
		out = append(out, capRun{
			Title:  fmt.Sprintf("%s, search %d of %d: %s, %s", name, i+1, len(c.Searches), capFound(&sc), capEnd(&sc)),
			Probes: s.Probes,
		})
	}
	return out
}

// capProbeRows are a search's probes, in the order they ran.
func capProbeRows(c *results.Capacity, probes []results.CapacityProbe) [][]string {
	var out [][]string
	for i, p := range probes {
		out = append(out, []string{
			strconv.Itoa(i + 1), p.Phase, format.Rate(p.Offered), format.Rate(p.Achieved),
			fmtLatency(p.LatencyUS.P50), fmtLatency(p.LatencyUS.At(c.Percentile)),
			capErrors(p), p.Verdict, p.Why,
		})
	}
	return out
}

// capErrors is a probe's errors: "0", "3 (0.15%)".
func capErrors(p results.CapacityProbe) string {
	if p.Errors == 0 {
		return "0"
	}
	return format.Count(p.Errors) + " (" + format.Percent(float64(p.Errors)/float64(p.Calls+p.Errors)) + ")"
}

func fmtLatency(us float64) string {
	if us <= 0 {
		return "–"
	}
	return format.US(us)
}

// tableCapacity prints the capacity sections in the table format.
func tableCapacity(ew *errWriter, r *results.Result) {
	for _, s := range capSections(r) {
		ew.printf("\n== capacity · %s ==\n", s.title())
		tw := columns(ew)
		fmt.Fprintln(tw, strings.Join(capSeriesHeader, "\t"))
		for _, c := range s.Series {
			fmt.Fprintln(tw, strings.Join(capSeriesRow(c), "\t"))
		}
		tw.Flush()
		for _, c := range s.Series {
			for _, run := range capRuns(c) {
				ew.printf("\n-- %s (%s) --\n", run.Title, capTerms(c.CapacityObjective))
				if len(run.Probes) == 0 {
					ew.printf("no probe ran\n")
					continue
				}
				tw := columns(ew)
				fmt.Fprintln(tw, strings.Join(capProbeHeader(c), "\t"))
				for _, row := range capProbeRows(c, run.Probes) {
					fmt.Fprintln(tw, strings.TrimRight(strings.Join(row, "\t"), "\t"))
				}
				tw.Flush()
			}
		}
	}
}

// markdownCapacity prints the capacity sections as Markdown tables.
func markdownCapacity(ew *errWriter, r *results.Result) {
	table := func(header []string, rows [][]string, right func(int) bool) {
		ew.printf("|")
		for _, h := range header {
			ew.printf(" %s |", mdEscape(h))
		}
		ew.printf("\n|")
		for i := range header {
			ew.printf("%s", map[bool]string{true: "--:|", false: ":--|"}[right(i)])
		}
		ew.printf("\n")
		for _, row := range rows {
			ew.printf("|")
			for _, v := range row {
				ew.printf(" %s |", mdEscape(v))
			}
			ew.printf("\n")
		}
	}
	for _, s := range capSections(r) {
		ew.printf("\n## Capacity · %s\n\n", mdEscape(s.title()))
		var rows [][]string
		for _, c := range s.Series {
			rows = append(rows, capSeriesRow(c))
		}
		table(capSeriesHeader, rows, func(i int) bool { return i == 1 || i == 3 })
		for _, c := range s.Series {
			for _, run := range capRuns(c) {
				ew.printf("\n### %s\n\n", mdEscape(run.Title))
				ew.printf("<sub>%s</sub>\n\n", mdEscape(capTerms(c.CapacityObjective)))
				if len(run.Probes) == 0 {
					ew.printf("No probe ran.\n")
					continue
				}
				table(capProbeHeader(c), capProbeRows(c, run.Probes), func(i int) bool { return i == 0 || (i >= 2 && i <= 6) })
			}
		}
	}
}

// htmlCapSection is a capacity section as the html template sees it.
type htmlCapSection struct {
	Title  string
	Header []string
	Rows   [][]string
	Series []htmlCapSeries
}

type htmlCapSeries struct {
	Title  string // "rest probes", "rest probes, search 2 of 3: ..."
	Note   string
	Header []string
	Rows   [][]string
}

func htmlCapacity(r *results.Result) []htmlCapSection {
	var out []htmlCapSection
	for _, s := range capSections(r) {
		h := htmlCapSection{Title: s.title(), Header: capSeriesHeader}
		for _, c := range s.Series {
			h.Rows = append(h.Rows, capSeriesRow(c))
			for _, run := range capRuns(c) {
				h.Series = append(h.Series, htmlCapSeries{
					Title:  run.Title,
					Note:   capTerms(c.CapacityObjective),
					Header: capProbeHeader(c),
					Rows:   capProbeRows(c, run.Probes),
				})
			}
		}
		out = append(out, h)
	}
	return out
}
