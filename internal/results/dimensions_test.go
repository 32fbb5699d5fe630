package results

import (
	"flag"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/internal/golden"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// conditionsCross is a set of conditions over every dimension's default and
// a few values of each, in no particular order: what the golden
// conditions.txt pins down.
func conditionsCross() []Condition {
	var out []Condition
	for _, n := range []int{2, 1} {
		for _, r := range []float64{0, 300, 2.5} {
			for _, s := range []int{0, 1, 2} {
				for _, l := range []string{"", "100mbit/20ms", "1gbit/500us", "odd"} {
					for _, rec := range []int{0, 10, 1000, 1} {
						for _, z := range []string{"", "gzip"} {
							for _, tls := range []bool{false, true} {
								out = append(out, Condition{Concurrency: n, RateRequested: r, ServerCPUs: s,
									Link: l, Records: rec, Compress: z, TLS: tls})
							}
						}
					}
				}
			}
		}
	}
	return out
}

// The key, labels and display order of every condition of the cross are
// those the implementation had before dimensions became a table
// (testdata/conditions.txt was written by that implementation).
func TestConditionsUnchanged(t *testing.T) {
	cs := conditionsCross()
	var b strings.Builder
	for _, c := range cs {
		var short []string
		for _, f := range c.Short() {
			short = append(short, fmt.Sprintf("%s=%s/%v", f.Dim, f.Short, f.Set))
		}
		fmt.Fprintf(&b, "%s | %s | %s | %s\n", c.String(), c.Label(), c.Features(), strings.Join(short, " "))
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Less(cs[j]) })
	b.WriteString("order:\n")
	for _, c := range cs {
		b.WriteString(c.String() + "\n")
	}
	golden.Check(t, filepath.Join("testdata", "conditions.txt"), []byte(b.String()), *update)
}

// Distinct conditions have distinct keys; each dimension's Clear makes it
// unset, and a condition whose every dimension is cleared is the zero one.
func TestDimensionsKeysAndDefaults(t *testing.T) {
	seen := map[string]Condition{}
	for _, c := range conditionsCross() {
		if o, dup := seen[c.String()]; dup {
			t.Fatalf("%+v and %+v share key %s", o, c, c.String())
		}
		seen[c.String()] = c
		for _, d := range Dimensions {
			if d.Always {
				continue
			}
			cc := c
			d.Clear(&cc)
			if d.IsSet(cc) {
				t.Errorf("%s: set after Clear (%+v)", d.Name, cc)
			}
		}
	}
	fields := map[string]bool{}
	for _, d := range Dimensions {
		if fields[d.Field] {
			t.Errorf("column %s declared twice", d.Field)
		}
		fields[d.Field] = true
	}
}
