package results

import (
	"strings"
	"testing"
)

func TestParseMix(t *testing.T) {
	m, err := ParseMix(" small=800, large=20,post=2.5")
	if err != nil {
		t.Fatal(err)
	}
	if m.String() != "small=800,large=20,post=2.5" || m.Total() != 822.5 || m.Rate("large") != 20 || m.Scale(2).Rate("post") != 5 {
		t.Fatalf("%v: total %v", m, m.Total())
	}
	for in, want := range map[string]string{
		"":                "no scenario",
		"small":           "want scenario=calls/s",
		"tiny=3":          `unknown scenario "tiny"`,
		"small=0":         "above 0",
		"small=-3":        "above 0",
		"small=x":         "not a number",
		"small=1,small=2": "given twice",
		"small=NaN":       "not a number",
	} {
		_, err := ParseMix(in)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseMix(%q) = %v, want one line with %q", in, err, want)
		}
	}
}
