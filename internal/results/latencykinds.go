package results

// LatencyKind indexes the latency figures of a cell that are kept as
// histograms: a tally holds one histogram per kind in an array indexed by
// it (no map on the per-call path), and LatencyKinds says where each kind
// goes in a document. A new kind is one constant before NumLatencyKinds,
// one entry of LatencyKinds, its Cell and Histograms fields, and the code
// that records its values.
type LatencyKind int

const (
	// KindLatency is the latency of every successful call (LatencyUS):
	// in open loop from its intended start.
	KindLatency LatencyKind = iota
	// KindUncorrected is open loop's latency from the actual send.
	KindUncorrected
	// KindFirstRecord is the stream scenario's time to the first record.
	KindFirstRecord
	// KindLastByte is the time from the send to the whole response.
	KindLastByte
	// KindDecode is the client's decode time.
	KindDecode
	// KindTLSHandshake is the TLS handshake time, one per connection.
	KindTLSHandshake
	// KindStreamSetup is the stream scenarios' time to open a stream (and
	// end the one before), one per stream, left out of the latency of
	// the message whose call opened it.
	KindStreamSetup

	NumLatencyKinds = iota
)

// A LatencyKindInfo is where a kind's figures live in a document.
type LatencyKindInfo struct {
	// Name is the kind's field in Histograms: "first_record".
	Name string
	// Field is the kind's summary's field in Cell: "first_record_us".
	Field string
	// Count is how many values the kind's histogram holds for a cell.
	Count HistCount
	// Hist is the kind's histogram in h (the encoded text).
	Hist func(h *Histograms) *string
	// Get is the kind's summary in c; nil when c has none.
	Get func(c *Cell) *Latency
	// Set sets the kind's summary in c (nil: none, or the zero Latency
	// for KindLatency, which every cell has).
	Set func(c *Cell, l *Latency)
}

// HistCount is how many values a kind's histogram holds, checked on read.
type HistCount int

const (
	// CountCalls: one value per successful call, exactly.
	CountCalls HistCount = iota
	// CountAtMostCalls: at most one value per successful call.
	CountAtMostCalls
	// CountConnections: one value per connection, not per call.
	CountConnections
)

// LatencyKinds is the table of the latency kinds, indexed by LatencyKind.
var LatencyKinds = [NumLatencyKinds]LatencyKindInfo{
	KindLatency: {
		Name: "latency", Field: "latency_us", Count: CountCalls,
		Hist: func(h *Histograms) *string { return &h.Latency },
		Get:  func(c *Cell) *Latency { return &c.LatencyUS },
		Set: func(c *Cell, l *Latency) {
			c.LatencyUS = Latency{}
			if l != nil {
				c.LatencyUS = *l
			}
		},
	},
	KindUncorrected: optionalKind("uncorrected", "latency_uncorrected_us", CountCalls, func(h *Histograms) *string { return &h.Uncorrected },
		func(c *Cell) **Latency { return &c.LatencyUncorrectedUS }),
	KindFirstRecord: optionalKind("first_record", "first_record_us", CountAtMostCalls, func(h *Histograms) *string { return &h.FirstRecord },
		func(c *Cell) **Latency { return &c.FirstRecordUS }),
	KindLastByte: optionalKind("last_byte", "last_byte_us", CountAtMostCalls, func(h *Histograms) *string { return &h.LastByte },
		func(c *Cell) **Latency { return &c.LastByteUS }),
	KindDecode: optionalKind("decode", "decode_us", CountAtMostCalls, func(h *Histograms) *string { return &h.Decode },
		func(c *Cell) **Latency { return &c.DecodeUS }),
	KindTLSHandshake: optionalKind("tls_handshake", "tls_handshake_us", CountConnections, func(h *Histograms) *string { return &h.TLSHandshake },
		func(c *Cell) **Latency { return &c.TLSHandshakeUS }),
	KindStreamSetup: optionalKind("stream_setup", "stream_setup_us", CountAtMostCalls, func(h *Histograms) *string { return &h.StreamSetup },
		func(c *Cell) **Latency { return &c.StreamSetupUS }),
}

// optionalKind is a kind a cell may lack: a *Latency field, nil when absent.
func optionalKind(name, jsonField string, count HistCount, hist func(*Histograms) *string, field func(*Cell) **Latency) LatencyKindInfo {
	return LatencyKindInfo{
		Name: name, Field: jsonField, Count: count, Hist: hist,
		Get: func(c *Cell) *Latency { return *field(c) },
		Set: func(c *Cell, l *Latency) { *field(c) = l },
	}
}
