package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/results"
)

// The run's environment says what carried --link and what the packet
// link delivered of each link, measured before the run.
func TestEnvLinkFidelity(t *testing.T) {
	r := &results.Result{Schema: results.Schema}
	r.Env.LinkEmulator = results.LinkPacket
	r.Env.LinkFidelity = []link.CheckResult{{Link: "20mbit/40ms/1%loss", DelaySetMS: 20.037, DelayP50MS: 20.2, DelayOK: true,
		LossSet: 0.01, Loss: 0.0099, LossPackets: 2000, LossBound: 0.67, LossOK: true, RateSetMbit: 20, RateMbit: 19.97, RateOK: true}}
	for _, format := range []string{"table", "markdown"} {
		var b bytes.Buffer
		if err := report.Write(&b, format, r); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"packet link", "20mbit/40ms/1%loss: delay p50 20.200 ms (set 20.037", "loss 0.99% of 2000"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("%s: no %q in\n%s", format, want, b.String())
			}
		}
	}
}
