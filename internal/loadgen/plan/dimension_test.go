package plan_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/meteorbench/meteorbench/api"
	"github.com/meteorbench/meteorbench/internal/loadgen/call"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
	"github.com/meteorbench/meteorbench/internal/report"
	"github.com/meteorbench/meteorbench/internal/results"
	"github.com/meteorbench/meteorbench/internal/target"
)

// A dimension is one declaration: a fake one, given by its
// results.Dimensions entry alone (values, default, protocols, where it
// lives in a Condition), is validated, swept by the plan for its
// protocols only, keyed, labelled, recorded in the settings, written as
// its JSON field and CSV column, and handed to each cell's client. A test
// cannot add a Condition field, so the fake lives in the JSON codec's
// field, with that dimension's own declarations (its entry here and its
// plan entry) taken out for the test.
func TestDimensionIsOneDeclaration(t *testing.T) {
	i := slices.IndexFunc(results.Dimensions, func(d results.Dimension) bool { return d.Field == "json_codec" })
	saved := results.Dimensions[i]
	restore := plan.WithoutPlanEntry("json_codec")
	t.Cleanup(func() { results.Dimensions[i] = saved; restore() })
	// The one entry (in place, so that the CSV header made at start-up
	// keeps its column where the rows put it).
	results.Dimensions[i] = results.Swept(results.Dimension{
		Name: "fake", Field: "json_codec", Default: "one", Values: []string{"one", "two"},
		Protocols: []api.Protocol{api.RESTProtobuf},
		Get:       func(c results.Condition) string { return c.JSONCodec },
		Set:       func(c *results.Condition, v string) { c.JSONCodec = v },
	})

	cfg := plan.Config{Target: target.One("127.0.0.1:1"), Scenarios: []api.Scenario{api.Small}, Batches: []int{1}}
	for _, bad := range [][]string{{"three"}, {"one", "one"}} {
		c := cfg
		c.Sweeps = map[string][]string{"json_codec": bad}
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "json-codec") {
			t.Errorf("values %v: Validate() = %v, want a refusal naming json-codec", bad, err)
		}
	}
	cfg.Sweeps = map[string][]string{"json_codec": {"one", "two"}}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}

	// The plan: every default protocol at the default, rest-protobuf at "two" too.
	cells := cfg.Cells()
	var two []results.CellKey
	for _, k := range cells {
		if k.JSONCodec != "" {
			two = append(two, k)
		}
	}
	if len(cells) != len(api.DefaultProtocols())+1 || len(two) != 1 || two[0].Protocol != api.RESTProtobuf || two[0].JSONCodec != "two" {
		t.Fatalf("cells %v: want every protocol once and rest-protobuf at two", cells)
	}
	k := two[0]
	if !strings.HasSuffix(k.Key(), "/json-codec-two") || !strings.Contains(k.Condition.Label(), "fake two") {
		t.Errorf("key %s, label %q: want the value named", k.Key(), k.Condition.Label())
	}
	if got := cfg.Settings().Sweeps["json_codec"]; !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("settings: sweeps %v", cfg.Settings().Sweeps)
	}

	// The document: the JSON field and the CSV column.
	j, err := json.Marshal(results.Cell{CellKey: k})
	if err != nil || !bytes.Contains(j, []byte(`"json_codec":"two"`)) {
		t.Errorf("JSON %s (%v): no json_codec field", j, err)
	}
	var b bytes.Buffer
	if err := report.Write(&b, "csv", &results.Result{Schema: results.Schema, Cells: []results.Cell{{CellKey: k}}}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("CSV %q: %v", b.String(), err)
	}
	if col := slices.Index(rows[0], "json_codec"); col < 0 || rows[1][col] != "two" {
		t.Errorf("CSV header %v row %v: want json_codec two", rows[0], rows[1])
	}

	// The client: the cell's value, the default's name at the default.
	clientSettings := func(k results.CellKey) map[string]string {
		var o call.Options
		plan.ClientSettings(k.Condition, &o)
		return o.Settings
	}
	for _, c := range cells {
		want := "one"
		if c == k {
			want = "two"
		}
		if got := clientSettings(c)["json_codec"]; got != want {
			t.Errorf("%s: client setting %q, want %q", c.Key(), got, want)
		}
	}
}
