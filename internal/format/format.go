// Package format writes figures for humans, one way for every output: a
// rate, a duration, a byte count, a percentage or a ratio prints the same in
// a verdict, a table, a chart and a capacity report.
//
// Numbers keep about three significant digits ("0.50", "98.7", "12,345"),
// with thousands separators; durations are given in microseconds and
// scaled to µs, ms or s; bytes are scaled in powers of 10 (B, KB, MB).
package format

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Number writes v with about three significant digits, grouping
// thousands: "0.50", "98.7", "12,345"; "n/a" for NaN and infinities.
func Number(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "n/a"
	case a == 0:
		return "0"
	case a < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return thousands(strconv.FormatFloat(v, 'f', 0, 64))
	}
}

// Tick writes an axis tick: Number without trailing zeros ("50", "2.5",
// "25,000").
func Tick(v float64) string {
	s := Number(v)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// Rate writes calls (or anything) per second: "12,345", "98.7", "0.50".
func Rate(v float64) string { return Number(v) }

// Count writes an integer count with thousands separators: "1,000".
func Count(n int64) string { return thousands(strconv.FormatInt(n, 10)) }

// thousands inserts thousands separators into a plain decimal integer string.
func thousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return sign + b.String()
}

// Records names a payload size: "1 record", "10 records", "10,000 records".
func Records(n int) string {
	if n == 1 {
		return "1 record"
	}
	return Count(int64(n)) + " records"
}

// A Unit scales a value for humans: the value divided by Div, followed by
// Name.
type Unit struct {
	Div  float64
	Name string
	// decimals, when set, gives the digits after the point of a value
	// already divided by Div (bytes keep four significant digits in KB);
	// otherwise the value is written as Number writes it.
	decimals func(v float64) int
}

// Units, largest first: for durations given in microseconds, and for bytes
// in powers of 10 (like MB/s).
var (
	durUnits  = []Unit{{Div: 1e6, Name: "s"}, {Div: 1e3, Name: "ms"}, {Div: 1, Name: "µs"}}
	byteUnits = []Unit{
		{Div: 1e6, Name: "MB", decimals: func(float64) int { return 2 }},
		{Div: 1e3, Name: "KB", decimals: kbDecimals},
		{Div: 1, Name: "B", decimals: func(float64) int { return 0 }},
	}
	bitUnits = []Unit{{Div: 1e9, Name: "Gbit/s"}, {Div: 1e6, Name: "Mbit/s"}, {Div: 1e3, Name: "kbit/s"}, {Div: 1, Name: "bit/s"}}
)

// kbDecimals keeps four significant digits in KB ("99.90 KB", "219.6 KB").
func kbDecimals(v float64) int {
	if math.Abs(v) < 99.995 {
		return 2
	}
	return 1
}

// pick returns the largest of units that v reaches, else the smallest.
func pick(v float64, units []Unit) Unit {
	a := math.Abs(v)
	for _, u := range units[:len(units)-1] {
		if a >= u.Div {
			return u
		}
	}
	return units[len(units)-1]
}

// USUnit picks µs, ms or s for a duration given in microseconds.
func USUnit(us float64) Unit { return pick(us, durUnits) }

// BytesUnit picks B, KB or MB for a byte count.
func BytesUnit(b float64) Unit { return pick(b, byteUnits) }

// Num writes v (in base units: µs, bytes) as a number of u, without the
// unit's name.
func (u Unit) Num(v float64) string {
	x := v / u.Div
	if u.decimals == nil {
		return Number(x)
	}
	return strconv.FormatFloat(x, 'f', u.decimals(x), 64)
}

// numAs writes v in u with the precision u gives to at: one precision for
// a median and its interval.
func (u Unit) numAs(v, at float64) string {
	if u.decimals == nil {
		return Number(v / u.Div)
	}
	return strconv.FormatFloat(v/u.Div, 'f', u.decimals(at/u.Div), 64)
}

// US writes a duration given in microseconds: "95.2 µs", "1.23 ms", "2.50 s".
func US(us float64) string {
	u := USUnit(us)
	return u.Num(us) + " " + u.Name
}

// Duration writes d as US does.
func Duration(d time.Duration) string { return US(float64(d) / 1e3) }

// Bytes writes a byte count: "245 B", "99.90 KB", "219.6 KB", "1.25 MB".
func Bytes(b float64) string {
	u := BytesUnit(b)
	return u.Num(b) + " " + u.Name
}

// BitRate writes a link rate in bits per second: "100 Mbit/s", "1.50 Gbit/s".
func BitRate(bps float64) string {
	u := pick(bps, bitUnits)
	return Tick(bps/u.Div) + " " + u.Name
}

// Seconds writes a duration in seconds the way time.Duration does, rounded
// to what a reader needs: "1.5s", "2m56s".
func Seconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= time.Minute:
		d = d.Round(time.Second)
	case d >= time.Second:
		d = d.Round(10 * time.Millisecond)
	default:
		d = d.Round(time.Microsecond)
	}
	return d.String()
}

// Percent writes a fraction as a percentage with two significant digits,
// none after the point from 10% up: "73%", "103%", "7.3%", "0.15%".
func Percent(f float64) string {
	p := 100 * f
	switch a := math.Abs(p); {
	case math.IsNaN(p) || math.IsInf(p, 0):
		return "n/a"
	case a == 0 || a >= 9.95:
		return strconv.FormatFloat(p, 'f', 0, 64) + "%"
	}
	return strconv.FormatFloat(p, 'g', 2, 64) + "%"
}

// Factor writes a ratio of at least 1 with two significant figures, three
// below 2: "1.03", "3.9", "12".
func Factor(f float64) string {
	switch {
	case f >= 9.95:
		return thousands(strconv.FormatFloat(f, 'f', 0, 64))
	case f >= 1.995:
		return strconv.FormatFloat(f, 'f', 1, 64)
	default:
		return strconv.FormatFloat(f, 'f', 2, 64)
	}
}

// Ratio writes a ratio as a factor: "4.8x", "1.17x".
func Ratio(f float64) string { return Factor(f) + "x" }

// Names lists typed names: "rest, grpc".
func Names[T ~string](names []T) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = string(n)
	}
	return strings.Join(parts, ", ")
}

// A Kind says how a figure is written.
type Kind int

const (
	KindRate  Kind = iota // calls/s, a plain number
	KindUS                // microseconds
	KindMS                // milliseconds
	KindBytes             // bytes
)

// Value writes one figure of the given kind.
func Value(v float64, k Kind) string {
	switch k {
	case KindUS:
		return US(v)
	case KindMS:
		return US(v * 1e3)
	case KindBytes:
		return Bytes(v)
	default:
		return Rate(v)
	}
}

// Interval writes a median with its interval in one unit and one
// precision: "1.23 [1.20, 1.31] ms", "12,345 [12,100, 12,600]"; the median
// alone when the bounds print the same.
func Interval(median, lo, hi float64, k Kind) string {
	num := Number
	name := ""
	switch k {
	case KindUS, KindMS:
		if k == KindMS {
			median, lo, hi = median*1e3, lo*1e3, hi*1e3
		}
		u := USUnit(median)
		num = func(v float64) string { return u.Num(v) }
		name = " " + u.Name
	case KindBytes:
		u := BytesUnit(median)
		at := median
		num = func(v float64) string { return u.numAs(v, at) }
		name = " " + u.Name
	}
	m, l, h := num(median), num(lo), num(hi)
	if l == m && h == m {
		return m + name // no spread worth showing at this precision
	}
	return m + " [" + l + ", " + h + "]" + name
}
