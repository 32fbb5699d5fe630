package link

import (
	"fmt"
	"testing"
	"time"

	"github.com/meteorbench/meteorbench/internal/testmode"
	"github.com/meteorbench/meteorbench/internal/timing"
)

// packetLink is a packet link for a test, closed at its end; without root
// or /dev/net/tun the test is skipped with the reason.
func packetLink(t *testing.T) *Packet {
	t.Helper()
	p, _, err := NewPacket()
	if err != nil {
		t.Skipf("packet link not available here: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// TestCheckFidelity: the packet link delivers the delay, the loss and the
// rate it is set to, and a Reno flow at 1% loss the Mathis bound's
// goodput (link.Check's bounds).
func TestCheckFidelity(t *testing.T) {
	p := packetLink(t)
	s, err := Parse(DefaultCheck)
	if err != nil {
		t.Fatal(err)
	}
	o := CheckOptions{TCPTime: 4 * time.Second}
	if testmode.Short(t, "no TCP flow: delay, loss and rate only") {
		o.Quick = true
	}
	judge := !testmode.UnderRace(t, "the link's bounds not judged: the forwarder runs several times slower")
	timing.Retry(t, 3, func(attempt int) []string {
		r, err := Check(t.Context(), p, s, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("timing: attempt %d (load %.2f): %s", attempt, timing.LoadAverage(), r)
		var misses []string
		if !judge {
			return nil
		}
		if !r.DelayOK {
			misses = append(misses, fmt.Sprintf("delay p50 %.3f ms, set %.3f", r.DelayP50MS, r.DelaySetMS))
		}
		if !r.LossOK {
			misses = append(misses, fmt.Sprintf("loss %.3f%%, set %.3f%%", r.Loss*100, r.LossSet*100))
		}
		if !r.RateOK {
			misses = append(misses, fmt.Sprintf("rate %.3f Mbit/s, set %.3f", r.RateMbit, r.RateSetMbit))
		}
		if !o.Quick && !r.TCPOK {
			misses = append(misses, fmt.Sprintf("TCP goodput %.2fx the Mathis bound", r.MathisRatio))
		}
		return misses
	})
}
