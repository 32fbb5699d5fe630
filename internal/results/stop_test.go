package results

import (
	"encoding/json"
	"errors"
	"testing"
)

// A stop reads and writes the strings documents have always held, and
// "failed" keeps its error apart from the reason.
func TestStopRoundTrip(t *testing.T) {
	for text, want := range map[string]Stop{
		"completed":                     {Reason: StopCompleted},
		"interrupted":                   {Reason: StopInterrupted},
		"failed: target down: dial tcp": {Reason: StopFailed, Err: "target down: dial tcp"},
		"interrupted (seg2.json)":       {Reason: StopInterrupted, Input: "seg2.json"},
		"failed: boom (seg2.json)":      {Reason: StopFailed, Err: "boom (seg2.json)"},
		"stopped by the moon":           {Reason: "stopped by the moon"},
		"":                              {},
	} {
		var doc struct {
			S Stop `json:"stop_reason"`
		}
		in, _ := json.Marshal(map[string]string{"stop_reason": text})
		if err := json.Unmarshal(in, &doc); err != nil || doc.S != want {
			t.Errorf("read %q: %+v, %v; want %+v", text, doc.S, err, want)
		}
		out, err := json.Marshal(doc)
		if err != nil || string(out) != string(in) {
			t.Errorf("%q wrote back %s, %v", text, out, err)
		}
	}
	if s := Failed(errors.New("refused")); s.Reason != StopFailed || s.Err != "refused" || s.String() != "failed: refused" {
		t.Errorf("Failed: %+v %q", s, s)
	}
}
