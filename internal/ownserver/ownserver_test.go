package ownserver

import (
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/data"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
)

// The own server's body limit fits the largest upload, and the bound per
// record really bounds the JSON the post scenario sends.
func TestArgs(t *testing.T) {
	base := []string{"serve", "--addr", "127.0.0.1:0"}
	for _, tc := range []struct {
		cfg  plan.Config
		want []string
	}{
		{plan.Config{Scenarios: api.Scenarios()}, base},
		{plan.Config{Scenarios: api.Scenarios(), Records: []int{1, 10000}}, base}, // 5 MB fits in 8 MiB
		{plan.Config{Scenarios: []api.Scenario{api.Large}, Records: []int{100000}}, base},
		{plan.Config{Scenarios: []api.Scenario{api.Post}, Records: []int{100000, 10}},
			append(slices.Clone(base), "--max-body", strconv.Itoa(100000*JSONRecordBound+1<<20))},
	} {
		if got := Args(tc.cfg); !slices.Equal(got, tc.want) {
			t.Errorf("%v %v: %q, want %q", tc.cfg.Scenarios, tc.cfg.Records, got, tc.want)
		}
	}
	ls, err := data.LandingsN(2 * data.Count)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ls {
		b, err := json.Marshal(ls[i])
		if err != nil {
			t.Fatal(err)
		}
		if len(b)+1 > JSONRecordBound {
			t.Fatalf("record %d: %d bytes of JSON, more than JSONRecordBound %d", i, len(b), JSONRecordBound)
		}
	}
}
