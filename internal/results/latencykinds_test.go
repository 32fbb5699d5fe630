package results

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Each latency kind names its Histograms and Cell fields as the JSON does,
// every Histograms field has its kind, and Get reads what Set wrote.
func TestLatencyKindsTable(t *testing.T) {
	tags := func(v any) map[string]bool {
		out := map[string]bool{}
		ty := reflect.TypeOf(v)
		for i := range ty.NumField() {
			out[strings.Split(ty.Field(i).Tag.Get("json"), ",")[0]] = true
		}
		return out
	}
	hist, cell := tags(Histograms{}), tags(Cell{})
	if len(hist) != len(LatencyKinds) {
		t.Errorf("Histograms has %d fields, LatencyKinds %d kinds", len(hist), len(LatencyKinds))
	}
	for k, info := range LatencyKinds {
		if !hist[info.Name] || !cell[info.Field] {
			t.Errorf("kind %d: histogram %q (in Histograms: %v), figure %q (in Cell: %v)", k, info.Name, hist[info.Name], info.Field, cell[info.Field])
		}
		var c Cell
		l := &Latency{P50: float64(k + 1)}
		info.Set(&c, l)
		if got := info.Get(&c); got == nil || *got != *l {
			t.Errorf("kind %s: Get after Set = %v", info.Name, got)
		}
		var h Histograms
		*info.Hist(&h) = "x"
		b, _ := json.Marshal(h)
		if !strings.Contains(string(b), `"`+info.Name+`":"x"`) {
			t.Errorf("kind %s writes %s", info.Name, b)
		}
	}
}
