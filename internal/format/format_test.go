package format

import (
	"math"
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	cases := []struct{ got, want string }{
		{thousands("1234567"), "1,234,567"},
		{thousands("-1234"), "-1,234"},
		{thousands("123"), "123"},
		{Count(1000), "1,000"},
		{Number(math.NaN()), "n/a"},
		{Number(0), "0"},
		{Rate(39526.4), "39,526"},
		{Rate(98.74), "98.7"},
		{Rate(0.5), "0.50"},
		{Tick(2.5), "2.5"},
		{Tick(25000), "25,000"},
		{Records(1), "1 record"},
		{Records(10000), "10,000 records"},
		{US(95.23), "95.2 µs"},
		{US(850), "850 µs"},
		{US(1234), "1.23 ms"},
		{US(2.5e6), "2.50 s"},
		{Duration(1500 * time.Microsecond), "1.50 ms"},
		{Bytes(118), "118 B"},
		{Bytes(219650), "219.7 KB"},
		{Bytes(99900), "99.90 KB"},
		{Bytes(1.25e6), "1.25 MB"},
		{BitRate(100e6), "100 Mbit/s"},
		{BitRate(1.5e9), "1.5 Gbit/s"},
		{BitRate(56e3), "56 kbit/s"},
		{Seconds(1.5), "1.5s"},
		{Seconds(176.4), "2m56s"},
		{Percent(0.73), "73%"},
		{Percent(1.03), "103%"},
		{Percent(0.073), "7.3%"},
		{Percent(0.0015), "0.15%"},
		{Percent(0.001), "0.1%"},
		{Percent(0), "0%"},
		{Ratio(4.81), "4.8x"},
		{Ratio(1.17), "1.17x"},
		{Ratio(12.4), "12x"},
		{Factor(1.999), "2.0"},
		{Names([]string{"rest", "grpc"}), "rest, grpc"},
		{Value(1.234, KindMS), "1.23 ms"},
		{Value(500, KindRate), "500"},
		{Interval(1234, 1200, 1310, KindUS), "1.23 [1.20, 1.31] ms"},
		{Interval(1.234, 1.2, 1.31, KindMS), "1.23 [1.20, 1.31] ms"},
		{Interval(118, 118, 118, KindBytes), "118 B"},
		{Interval(99900, 99000, 100500, KindBytes), "99.90 [99.00, 100.50] KB"},
		{Interval(12345, 12100, 12600, KindRate), "12,345 [12,100, 12,600]"},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: got %q, want %q", i, c.got, c.want)
		}
	}
}
