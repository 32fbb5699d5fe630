package fit

import (
	"strings"
	"testing"
)

func TestParseTier(t *testing.T) {
	for in, want := range map[string]Tier{
		"1cpu":             {CPUs: 1},
		"2cpu/4gb":         {CPUs: 2, MemoryMiB: 4096},
		"0.5cpu/512mb":     {CPUs: 0.5, MemoryMiB: 512},
		"1cpu/100mbit":     {CPUs: 1},
		"1cpu/2gb/100mbit": {CPUs: 1, MemoryMiB: 2048},
	} {
		got, err := ParseTier(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got.CPUs != want.CPUs || got.MemoryMiB != want.MemoryMiB || got.Name != in {
			t.Errorf("%s: %+v, want %+v", in, got, want)
		}
		if hasLink := strings.Contains(in, "mbit"); got.HasLink() != hasLink || hasLink && got.linkMbit() != 100 {
			t.Errorf("%s: link %v", in, got.Link)
		}
	}
	l, err := ParseTier("1cpu/100mbit/20ms")
	if err != nil || l.RTT().Milliseconds() != 20 {
		t.Fatalf("rtt: %v %v", l.RTT(), err)
	}
	for _, bad := range []string{"", "cpu", "0cpu", "-1cpu", "100mbit/1cpu", "1cpu/2gb/3gb", "1cpu/20ms", "1cpu/fast", "1cpu/0gb", "1cpu/100mbit/200mbit"} {
		if _, err := ParseTier(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line of error", bad, err)
		}
	}
}

func TestParseTiersSmallestFirst(t *testing.T) {
	ts, err := ParseTiers("2cpu/200mbit,1cpu/200mbit,1cpu/100mbit")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range ts {
		names = append(names, x.Name)
	}
	if got := strings.Join(names, ","); got != "1cpu/100mbit,1cpu/200mbit,2cpu/200mbit" {
		t.Fatal(got)
	}
	if _, err := ParseTiers("1cpu,1cpu"); err == nil {
		t.Fatal("a tier twice: no error")
	}
}
