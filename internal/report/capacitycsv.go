package report

import (
	"io"
	"slices"
	"strconv"

	"github.com/meteorbench/meteorbench/internal/results"
)

// CapacityCSVHeader is the csv format of a capacity document: one row per
// probe, in the document's order, each with its series' result (a series
// with no probe has one row, the probe columns empty). Rates are in calls
// per second, latencies in microseconds from each call's intended start;
// latency_objective_us is the objective's percentile (percentile says
// which). workers is the open-loop workers of the probes at the found rate
// (a check with run --concurrency); generator_bound is empty unless a void
// probe ended the search; hi is empty when no rate failed; failure is set
// when the search failed (the target stalled). searches is how many
// searches the series ran: with several, rate is their median, rate_min
// and rate_max their range, and search and search_rate say which search a
// probe belongs to and what that search found. The condition's dimensions
// are written as the JSON has them (results.Dimensions); a dimension added
// later than tls gets its column appended at the end. The requested rate
// is not a column: a capacity series' condition has none, the search
// finds the rate.
var CapacityCSVHeader = slices.Concat(
	[]string{"scenario", "protocol"}, capacityDimensions, capacitySeriesColumns, capacityProbeColumns,
	dimensionColumns(slices.Concat(capacityDimensions, []string{"rate_requested"})),
)

// capacityDimensions is the dimensions' columns at the place the first
// capacity CSVs put them.
var capacityDimensions = []string{"concurrency", "server_cpus", "link", "records", "compress", "tls"}

var capacitySeriesColumns = []string{
	"objective", "percentile", "bound_us", "max_errors",
	"rate", "lo", "hi", "held", "boundary", "workers", "generator_bound", "complete", "note",
	"searches", "rate_min", "rate_max", "failure",
}

var capacityProbeColumns = []string{
	"search", "search_rate",
	"probe", "phase", "offered", "achieved", "latency_p50_us", "latency_objective_us",
	"calls", "errors", "verdict", "why", "duration_s",
}

func capacityCSVRows(r *results.Result) [][]string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	opt := func(v float64) string {
		if v == 0 {
			return ""
		}
		return f(v)
	}
	have := slices.Concat(capacityDimensions, []string{"rate_requested"})
	var out [][]string
	for i := range r.Capacity {
		c := &r.Capacity[i]
		k := c.Condition
		series := []string{string(c.Scenario), string(c.Protocol)}
		for _, col := range capacityDimensions {
			d, _ := results.DimensionByField(col)
			series = append(series, d.CSV(k))
		}
		series = append(series,
			c.Objective, f(c.Percentile), f(c.BoundUS), f(c.MaxErrors),
			f(c.Rate), f(c.Lo), opt(c.Hi), strconv.Itoa(c.Held), strconv.Itoa(c.Boundary), strconv.Itoa(c.Workers), opt(c.GeneratorBound),
			strconv.FormatBool(c.Complete), c.Note,
			strconv.Itoa(c.Repeated()), opt(c.RateMin), opt(c.RateMax), c.Failure,
		)
		searches := c.Searches
		if len(searches) == 0 {
			searches = []results.CapacitySearch{c.CapacitySearch}
		}
		rows := 0
		for si, s := range searches {
			for j, p := range s.Probes {
				row := append(append([]string(nil), series...),
					strconv.Itoa(si+1), f(s.Rate),
					strconv.Itoa(j+1), p.Phase, f(p.Offered), f(p.Achieved), f(p.LatencyUS.P50), f(p.LatencyUS.At(c.Percentile)),
					strconv.FormatInt(p.Calls, 10), strconv.FormatInt(p.Errors, 10), p.Verdict, p.Why, f(p.DurationS))
				out = append(out, appendDimensions(row, have, k))
				rows++
			}
		}
		if rows == 0 {
			row := append(series, make([]string, len(capacityProbeColumns))...)
			out = append(out, appendDimensions(row, have, k))
		}
	}
	return out
}

// writeCapacityCSV writes a capacity document's csv: CapacityCSVHeader.
func writeCapacityCSV(w io.Writer, r *results.Result) error {
	return writeCSVRows(w, CapacityCSVHeader, capacityCSVRows(r))
}
