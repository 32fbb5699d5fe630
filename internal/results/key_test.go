package results

import "testing"

func TestConditionLink(t *testing.T) {
	old := Condition{Concurrency: 4, RateRequested: 300}
	if got := old.String(); got != "c4/r300" {
		t.Errorf("no link: key %q, want the old c4/r300", got)
	}
	c := Condition{Concurrency: 4, Link: "100mbit/20ms"}
	if got := c.String(); got != "c4/l100mbit-20ms" {
		t.Errorf("key %q", got)
	}
	if got := c.Label(); got != "concurrency 4 · link 100 Mbit/s, 20 ms RTT" {
		t.Errorf("label %q", got)
	}
	order := []Condition{
		{Concurrency: 1},
		{Concurrency: 1, Link: "1gbit/500us"},
		{Concurrency: 1, Link: "100mbit/20ms"},
		{Concurrency: 1, Link: "100mbit/80ms"},
		{Concurrency: 1, Link: "not-a-link"},
		{Concurrency: 2},
	}
	for i := range order {
		for j := range order {
			if got, want := order[i].Less(order[j]), i < j; got != want {
				t.Errorf("%v.Less(%v) = %v, want %v", order[i], order[j], got, want)
			}
		}
	}
}
