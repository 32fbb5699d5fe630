package results

// Figure names one figure of a cell: the keys of Sample and Cell.CI, the
// figures verdicts and compare speak of. Cell.Figure is the one way to read
// a figure from a cell.
type Figure string

// The figures, with what they read (see Cell.Figure).
const (
	FigCallsPerS     Figure = "calls_per_s"             // successful calls per second
	FigLatencyP50    Figure = "latency_us_p50"          // LatencyUS.P50
	FigLatencyP90    Figure = "latency_us_p90"          // LatencyUS.P90
	FigLatencyP99    Figure = "latency_us_p99"          // LatencyUS.P99
	FigLatencyP999   Figure = "latency_us_p999"         // LatencyUS.P999
	FigBatchMS       Figure = "batch_ms_mean"           // BatchMS.Mean, closed loop with a whole batch
	FigBytesSent     Figure = "bytes_sent_per_call"     // BytesPerCall.Sent
	FigBytesReceived Figure = "bytes_received_per_call" // BytesPerCall.Received
	FigBytesTotal    Figure = "bytes_per_call"          // BytesPerCall.Sent + Received
	FigClientCPU     Figure = "client_cpu_us_per_call"  // ClientCPUUSPerCall
	FigServerCPU     Figure = "server_cpu_us_per_call"  // ServerCPUUSPerCall, when known
	FigLastByteP50   Figure = "last_byte_us_p50"        // LastByteUS.P50, when reported
	FigDecodeMean    Figure = "decode_us_mean"          // DecodeUS.Mean, when reported
)

// FigureInfo describes a figure for people and for comparisons.
type FigureInfo struct {
	Name  Figure
	Label string // "latency p50"
	Unit  string // "µs", "ms", "B", "calls/s"
	// HigherIsBetter is true for throughput, false for latency and costs.
	HigherIsBetter bool
	// read reads the figure from a cell with at least one successful call
	// (Cell.Figure); ok is false when the cell has no such figure.
	read func(c *Cell) (v float64, ok bool)
}

// Figures lists every figure, in the order tables show them, with how
// Cell.Figure reads it.
var figures = []FigureInfo{
	{FigCallsPerS, "calls/s", "calls/s", true, func(c *Cell) (float64, bool) { return c.CallsPerS, true }},
	{FigLatencyP50, "latency p50", "µs", false, func(c *Cell) (float64, bool) { return c.LatencyUS.P50, true }},
	{FigLatencyP90, "latency p90", "µs", false, func(c *Cell) (float64, bool) { return c.LatencyUS.P90, true }},
	{FigLatencyP99, "latency p99", "µs", false, func(c *Cell) (float64, bool) { return c.LatencyUS.P99, true }},
	{FigLatencyP999, "latency p99.9", "µs", false, func(c *Cell) (float64, bool) { return c.LatencyUS.P999, true }},
	{FigBatchMS, "time/batch", "ms", false, func(c *Cell) (float64, bool) { return c.BatchMS.Mean, c.Batches > 0 && c.BatchMS.Mean > 0 }},
	{FigBytesSent, "bytes/call sent", "B", false, func(c *Cell) (float64, bool) { return c.BytesPerCall.Sent, true }},
	{FigBytesReceived, "bytes/call received", "B", false, func(c *Cell) (float64, bool) { return c.BytesPerCall.Received, true }},
	{FigBytesTotal, "bytes/call", "B", false, func(c *Cell) (float64, bool) { return c.BytesPerCall.Sent + c.BytesPerCall.Received, true }},
	{FigClientCPU, "client CPU/call", "µs", false, func(c *Cell) (float64, bool) { return c.ClientCPUUSPerCall, true }},
	{FigServerCPU, "server CPU/call", "µs", false, func(c *Cell) (float64, bool) { return deref(c.ServerCPUUSPerCall) }},
	{FigLastByteP50, "last byte p50", "µs", false, func(c *Cell) (float64, bool) { return latencyOf(c.LastByteUS).P50, c.LastByteUS != nil }},
	{FigDecodeMean, "client decode/call", "µs", false, func(c *Cell) (float64, bool) { return latencyOf(c.DecodeUS).Mean, c.DecodeUS != nil }},
}

// Figures returns every figure's description, in table order.
func Figures() []FigureInfo { return append([]FigureInfo(nil), figures...) }

// Info describes f; ok is false for an unknown name.
func (f Figure) Info() (FigureInfo, bool) {
	for _, fi := range figures {
		if fi.Name == f {
			return fi, true
		}
	}
	return FigureInfo{Name: f, Label: string(f)}, false
}

// Figure reads one figure of the cell. ok is false when the cell has no
// such figure, which is not a figure of 0:
//   - every per-call figure, when the cell has no successful call;
//   - time per batch, in open loop or when no whole batch completed;
//   - server CPU, when the server's metrics could not be read;
//   - last byte and decode time, when the protocol adapter reports neither.
//
// Calls per second is always there (0 calls/s is a measurement).
func (c *Cell) Figure(f Figure) (v float64, ok bool) {
	fi, known := f.Info()
	if !known || (c.Calls == 0 && f != FigCallsPerS) {
		return 0, false
	}
	return fi.read(c)
}

// deref is *p, and whether p is set.
func deref(p *float64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return *p, true
}

// latencyOf is *l, or a zero Latency when l is nil.
func latencyOf(l *Latency) Latency {
	if l == nil {
		return Latency{}
	}
	return *l
}

// Sample returns every figure the cell has, as one repeat's Sample.
func (c *Cell) Sample() Sample {
	s := Sample{}
	for _, fi := range figures {
		if v, ok := c.Figure(fi.Name); ok {
			s[fi.Name] = v
		}
	}
	return s
}

// RepeatValues returns a figure's per-repeat values (only the repeats that
// have it).
func (c *Cell) RepeatValues(f Figure) []float64 {
	var out []float64
	for _, s := range c.Repeats {
		if v, ok := s[f]; ok {
			out = append(out, v)
		}
	}
	return out
}
