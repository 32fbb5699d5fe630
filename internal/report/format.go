package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/meteorbench/meteorbench/internal/results"
)

// A unit scales a value for humans: v/div, followed by name.
type unit struct {
	div  float64
	name string
}

// Units, largest first: for durations given in microseconds, and for
// bytes in powers of 10 (like MB/s).
var (
	durUnits  = []unit{{1e6, "s"}, {1e3, "ms"}, {1, "µs"}}
	byteUnits = []unit{{1e6, "MB"}, {1e3, "KB"}, {1, "B"}}
)

// pickUnit returns the largest of units that v reaches, else the smallest.
func pickUnit(v float64, units []unit) unit {
	a := math.Abs(v)
	for _, u := range units[:len(units)-1] {
		if a >= u.div {
			return u
		}
	}
	return units[len(units)-1]
}

// durUnit picks µs, ms or s for a duration given in microseconds.
func durUnit(us float64) unit { return pickUnit(us, durUnits) }

// byteUnit picks B, KB or MB.
func byteUnit(b float64) unit { return pickUnit(b, byteUnits) }

// sig3 formats v with about three significant digits, grouping thousands.
func sig3(v float64) string {
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

// fmtCount formats an integer count with thousands separators.
func fmtCount(n int64) string { return thousands(strconv.FormatInt(n, 10)) }

// fmtUS formats a duration given in microseconds: "95.2 µs", "1.23 ms".
func fmtUS(us float64) string {
	u := durUnit(us)
	return sig3(us/u.div) + " " + u.name
}

// fmtBytes formats a byte count: "245 B", "219.6 KB", "1.25 MB".
func fmtBytes(b float64) string {
	u := byteUnit(b)
	return bytesNum(b/u.div, u) + " " + u.name
}

func bytesNum(v float64, u unit) string {
	return strconv.FormatFloat(v, 'f', bytesDecimals(v, u), 64)
}

// bytesDecimals keeps four significant digits in KB ("99.90 KB",
// "219.6 KB"), none in B and two in MB.
func bytesDecimals(v float64, u unit) int {
	switch u.name {
	case "B":
		return 0
	case "KB":
		if math.Abs(v) < 99.995 {
			return 2
		}
		return 1
	default:
		return 2
	}
}

// fmtRate formats a rate such as calls/s: "12,345", "98.7", "0.50".
func fmtRate(v float64) string { return sig3(v) }

// fmtSeconds formats a duration in seconds the way time.Duration does,
// rounded to what a reader needs.
func fmtSeconds(s float64) string {
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

// kind says how a figure is formatted.
type kind int

const (
	kindRate  kind = iota // calls/s, plain number
	kindUS                // microseconds
	kindMS                // milliseconds
	kindBytes             // bytes
)

// fmtValue formats one value of the given kind.
func fmtValue(v float64, k kind) string {
	switch k {
	case kindUS:
		return fmtUS(v)
	case kindMS:
		return fmtUS(v * 1e3)
	case kindBytes:
		return fmtBytes(v)
	default:
		return fmtRate(v)
	}
}

// fmtInterval formats a median with its interval in one unit:
// "1.23 [1.20, 1.31] ms", "12,345 [12,100, 12,600]".
func fmtInterval(iv results.Interval, k kind) string {
	num := func(v float64) string { return fmtRate(v) }
	name := ""
	switch k {
	case kindUS, kindMS:
		mul := 1.0
		if k == kindMS {
			mul = 1e3
		}
		u := durUnit(iv.Median * mul)
		num = func(v float64) string { return sig3(v * mul / u.div) }
		name = " " + u.name
	case kindBytes:
		u := byteUnit(iv.Median)
		dec := bytesDecimals(iv.Median/u.div, u) // one precision for all three
		num = func(v float64) string { return strconv.FormatFloat(v/u.div, 'f', dec, 64) }
		name = " " + u.name
	}
	m, lo, hi := num(iv.Median), num(iv.Lo), num(iv.Hi)
	if lo == m && hi == m {
		return m + name // no spread worth showing at this precision
	}
	return fmt.Sprintf("%s [%s, %s]%s", m, lo, hi, name)
}

// fmtErrors formats an error count with its classes, most frequent first:
// "4 (deadline_exceeded 3, unavailable 1)".
func fmtErrors(n int64, classes map[string]int64) string {
	if len(classes) == 0 {
		return fmtCount(n)
	}
	names := errorClasses(classes)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + " " + fmtCount(classes[k])
	}
	return fmtCount(n) + " (" + strings.Join(parts, ", ") + ")"
}
