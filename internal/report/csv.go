package report

import (
	"encoding/csv"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/meteorbench/meteorbench/internal/results"
)

// CSVHeader is the fixed column set of the csv format, one row per cell in
// the document's order; new columns are only ever appended. Latencies are
// in microseconds, bytes per call in bytes, CPU in microseconds, all per
// successful call as in the JSON; rates in calls per second.
// server_cpu_us_per_call, first_record_p50_us, last_byte_p50_us,
// decode_mean_us and the three rate columns are empty when the cell does
// not have them; stop_reason is empty when the cell ran to its bound;
// suspect is the cell's reasons joined by "; " (empty when it checked out);
// server_utilisation and generator_wake_p50_us are empty when unknown. With
// repeats the figures are medians over the repeats and calls/errors are
// totals. After them, one column per dimension of the cell's condition
// that the columns above do not already have (server_cpus, link, records,
// compress, tls, and any dimension added later), named and written as the
// JSON has it (results.Dimensions), so every cell of a sweep is its own row.
var CSVHeader = slices.Concat(cellCSVHeader, dimensionColumns(cellCSVHeader))

// cellCSVHeader is the csv columns of a cell before its dimensions'. It
// is closed: a new figure column would push the dimensions' columns to the
// right. Such a column goes after them instead (a list of its own, after
// dimensionColumns in CSVHeader), and TestCSVHeaderOnlyGrows keeps every
// column that exists in its place.
var cellCSVHeader = []string{
	"protocol", "scenario", "batch", "concurrency", "connections", "mode",
	"calls", "errors", "duration_s", "calls_per_s", "mb_per_s",
	"latency_p50_us", "latency_p90_us", "latency_p99_us", "latency_p999_us", "latency_max_us", "latency_mean_us",
	"batch_ms_mean", "batch_ms_stddev",
	"bytes_sent_per_call", "bytes_received_per_call",
	"client_cpu_us_per_call", "server_cpu_us_per_call",
	"first_record_p50_us",
	"rate_requested", "rate_achieved", "late_calls",
	"last_byte_p50_us", "decode_mean_us", "stop_reason",
	"suspect", "server_utilisation", "generator_wake_p50_us",
}

// writeCSV writes one row per cell (CSVHeader); a capacity document, which
// has no cells, one row per probe (CapacityCSVHeader).
func writeCSV(w io.Writer, r *results.Result) error {
	if r.FitPlan != nil {
		return writeFitCSV(w, r) // fit.go
	}
	if len(r.Cells) == 0 && len(r.Capacity) > 0 {
		return writeCapacityCSV(w, r)
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for i := range r.Cells {
		c := &r.Cells[i]
		server, first := "", ""
		if c.ServerCPUUSPerCall != nil {
			server = f(*c.ServerCPUUSPerCall)
		}
		if c.FirstRecordUS != nil {
			first = f(c.FirstRecordUS.P50)
		}
		rateReq, rateAch, late := "", "", ""
		if c.RateRequested > 0 {
			rateReq, rateAch, late = f(c.RateRequested), f(c.RateAchieved), strconv.FormatInt(c.LateCalls, 10)
		}
		opt := func(fig results.Figure) string {
			if v, ok := c.Figure(fig); ok {
				return f(v)
			}
			return ""
		}
		util, wake := "", ""
		if c.ServerUtilisation != nil {
			util = f(*c.ServerUtilisation)
		}
		if g := c.GeneratorDelayUS; g != nil {
			wake = f(g.Wake.P50)
		}
		l := c.LatencyUS
		rec := []string{
			string(c.Protocol), string(c.Scenario), strconv.Itoa(c.Batch), strconv.Itoa(c.Concurrency), strconv.Itoa(c.Connections), c.Mode,
			strconv.FormatInt(c.Calls, 10), strconv.FormatInt(c.Errors, 10), f(c.DurationS), f(c.CallsPerS), f(c.MBPerS),
			f(l.P50), f(l.P90), f(l.P99), f(l.P999), f(l.Max), f(l.Mean),
			f(c.BatchMS.Mean), f(c.BatchMS.Stddev),
			f(c.BytesPerCall.Sent), f(c.BytesPerCall.Received),
			f(c.ClientCPUUSPerCall), server,
			first,
			rateReq, rateAch, late,
			opt(results.FigLastByteP50), opt(results.FigDecodeMean), string(c.StopReason),
			strings.Join(c.Suspect, "; "), util, wake,
		}
		rec = appendDimensions(rec, cellCSVHeader, c.Condition)
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// dimensionColumns is the CSV columns of the dimensions a header does not
// have yet, in table order (those of CSVLast after the others): what a
// CSV appends after its own columns.
func dimensionColumns(header []string) []string {
	var out []string
	for _, d := range csvDimensions(header) {
		out = append(out, d.Field)
	}
	return out
}

// appendDimensions appends c's values of dimensionColumns(header).
func appendDimensions(row, header []string, c results.Condition) []string {
	for _, d := range csvDimensions(header) {
		row = append(row, d.CSV(c))
	}
	return row
}

// csvDimensions are the dimensions of dimensionColumns(header), in its
// order.
func csvDimensions(header []string) []results.Dimension {
	var first, last []results.Dimension
	for _, d := range results.Dimensions {
		switch {
		case slices.Contains(header, d.Field):
		case d.CSVLast:
			last = append(last, d)
		default:
			first = append(first, d)
		}
	}
	return append(first, last...)
}

// writeCSVRows writes a header and rows.
func writeCSVRows(w io.Writer, header []string, rows [][]string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	return cw.Error()
}
