package link

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bps      int64
		rtt      time.Duration
	}{
		{"none", "none", 0, 0},
		{"", "none", 0, 0},
		{"100mbit/20ms", "100mbit/20ms", 1e8, 20 * time.Millisecond},
		{" VPS ", "100mbit/20ms", 1e8, 20 * time.Millisecond},
		{"lan", "1gbit/500us", 1e9, 500 * time.Microsecond},
		{"wan", "20mbit/80ms", 2e7, 80 * time.Millisecond},
		{"mobile", "10mbit/50ms", 1e7, 50 * time.Millisecond},
		{"1.5mbit/0.5ms", "1500kbit/500us", 1.5e6, 500 * time.Microsecond},
		{"1000kbit/1000ms", "1mbit/1s", 1e6, time.Second},
		{"10gbit/0s", "10gbit/0us", 1e10, 0},
		{"64kbit/250us", "64kbit/250us", 64e3, 250 * time.Microsecond},
		{"50mbit/80ms/1%loss/5msjitter", "50mbit/80ms/1%loss/5msjitter", 5e7, 80 * time.Millisecond},
		{"20mbit/40ms/0%loss", "20mbit/40ms", 2e7, 40 * time.Millisecond},
		{"20mbit/40ms/0.5%reorder/2%LOSS/4burst", "20mbit/40ms/2%loss/4burst/0.5%reorder", 2e7, 40 * time.Millisecond},
		{"20mbit/40ms/1%loss/1burst", "20mbit/40ms/1%loss", 2e7, 40 * time.Millisecond},
	} {
		s, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if s.String() != tc.want || s.BitsPerSecond() != tc.bps || s.RTT() != tc.rtt {
			t.Errorf("Parse(%q) = %s (%d bit/s, %v), want %s (%d, %v)", tc.in, s, s.BitsPerSecond(), s.RTT(), tc.want, tc.bps, tc.rtt)
		}
		if back, err := Parse(s.String()); err != nil || back != s {
			t.Errorf("Parse(%q) = %v, %v: not a round trip", s.String(), back, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{
		"fast", "100mbit", "100/20ms", "100mbit/20", "100mb/20ms", "mbit/20ms",
		"-1mbit/20ms", "100mbit/-20ms", "0mbit/20ms", "1e3mbit/1ms", "inf/1ms",
		"100gbit/1ms", "100mbit/11s", "100mbit/0.5us", "0.1kbit/1ms", "100mbit/20ms/x",
		"63kbit/1ms", "100mbit/20ms/51%loss", "100mbit/20ms/-1%loss", "100mbit/20ms/1%loss/1%loss",
		"100mbit/20ms/4burst", "100mbit/20ms/1%loss/0.5burst", "100mbit/20ms/11msjitter",
		"100mbit/20ms/1.5usjitter", "100mbit/20ms/60%reorder", "100mbit/20ms/1%lost", "100mbit/20ms/",
		"100mbit/20ms/%loss", "100mbit/20ms/nan%loss", "1mbit/10.5s",
	} {
		_, err := Parse(in)
		if err == nil {
			t.Errorf("Parse(%q): no error", in)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, in) {
			t.Errorf("Parse(%q): error %q: want one line naming the spec", in, msg)
		}
	}
}

func TestLabelAndCompare(t *testing.T) {
	for in, want := range map[string]string{
		"none":         "no link emulation",
		"vps":          "100 Mbit/s, 20 ms RTT",
		"lan":          "1 Gbit/s, 0.5 ms RTT",
		"1500kbit/2s":  "1.5 Mbit/s, 2 s RTT",
		"64kbit/250us": "64 kbit/s, 0.25 ms RTT",
		"50mbit/80ms/1%loss/4burst/5msjitter/0.1%reorder": "50 Mbit/s, 80 ms RTT, 1% loss in bursts of 4, ±5 ms jitter, 0.1% reordered",
	} {
		s, _ := Parse(in)
		if got := s.Label(); got != want {
			t.Errorf("%s: Label %q, want %q", in, got, want)
		}
	}
	order := []string{"none", "1gbit/1ms", "1gbit/2ms", "100mbit/0us", "100mbit/0us/1%loss", "100mbit/0us/2%loss", "100mbit/2ms/2%loss/3burst", "64kbit/1s"}
	for i := range order {
		for j := range order {
			a, _ := Parse(order[i])
			b, _ := Parse(order[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := Compare(a, b); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"none", "vps", "1.5mbit/0.5ms", "10gbit/0s", "3kbit/7us", "50mbit/80ms/1%loss/4burst/5msjitter/0.1%reorder"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(in)
		if err != nil {
			return
		}
		back, err := Parse(s.String())
		if err != nil || back != s {
			t.Fatalf("Parse(%q) = %s, which parses as %v, %v", in, s, back, err)
		}
	})
}
