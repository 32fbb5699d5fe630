package results

import "strings"

// StopReason is why a run, or a cell's measurement, ended.
type StopReason string

// Stop reasons. A run ends completed, interrupted or failed; a cell's
// measurement ends early (Cell.StopReason) when the run was interrupted or
// the target went down, and has no reason ("") when it ran to its bound.
const (
	StopCompleted   StopReason = "completed"   // every cell of the plan was measured
	StopInterrupted StopReason = "interrupted" // the run was cancelled (Ctrl-C)
	StopFailed      StopReason = "failed"      // the target went away or refused the calls: Stop.Err says how
	StopTargetDown  StopReason = "target down" // a cell: nothing but transport errors for TargetDownAfter
)

// Stop is why a run ended: its reason, the error of a failed run, and in a
// merged document the input that stopped so. In JSON it is the one string
// documents have always had (stop_reason): "completed", "interrupted",
// "failed: ERR", a merged document's "interrupted (seg2.json)". Reading
// one back gives the same string; a string of no known shape is kept
// whole as the reason.
type Stop struct {
	Reason StopReason
	Err    string // the failure of StopFailed
	Input  string // merge: the input whose run stopped so
}

// Failed is the stop of a run that failed with err.
func Failed(err error) Stop { return Stop{Reason: StopFailed, Err: err.Error()} }

// String is the stop as documents write it.
func (s Stop) String() string {
	out := string(s.Reason)
	if s.Err != "" {
		out += ": " + s.Err
	}
	if s.Input != "" {
		out += " (" + s.Input + ")"
	}
	return out
}

// MarshalText writes String.
func (s Stop) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads what String writes. A failure's error runs to the
// end of the string: a merged document's "failed: ERR (INPUT)" reads as
// the error "ERR (INPUT)", and writes back the same.
func (s *Stop) UnmarshalText(b []byte) error {
	text := string(b)
	*s = Stop{Reason: StopReason(text)}
	if err, ok := strings.CutPrefix(text, string(StopFailed)+": "); ok {
		*s = Stop{Reason: StopFailed, Err: err}
		return nil
	}
	for _, r := range []StopReason{StopCompleted, StopInterrupted, StopFailed} {
		if in, ok := strings.CutPrefix(text, string(r)+" ("); ok && strings.HasSuffix(in, ")") {
			*s = Stop{Reason: r, Input: strings.TrimSuffix(in, ")")}
		}
	}
	return nil
}
