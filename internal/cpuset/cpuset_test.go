package cpuset

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		n        int
	}{
		{"0", "0", 1},
		{"0-1", "0-1", 2},
		{"0,2-3", "0,2-3", 3},
		{"3,1,2", "1-3", 3},
		{"0,1", "0-1", 2},
		{"5-5", "5", 1},
		{"0-2,4,6-7", "0-2,4,6-7", 6},
		{" 1 \n", "1", 1},
		{"0 - 1 , 3", "0-1,3", 3},
		{"007", "7", 1},
		{"1023", "1023", 1},
	} {
		s, err := Parse(tc.in)
		if err != nil || s.String() != tc.want || s.Len() != tc.n {
			t.Errorf("Parse(%q) = %q (Len %d), %v; want %q (Len %d)", tc.in, s, s.Len(), err, tc.want, tc.n)
		}
		if again, err := Parse(s.String()); err != nil || !again.Equal(s) {
			t.Errorf("Parse(%q) again = %q, %v", s, again, err)
		}
	}
	for _, tc := range []struct{ in, wantErr string }{
		{"", "empty CPU list"},
		{"  ", "empty CPU list"},
		{"a", `"a" is not a CPU number`},
		{"3-1", `range "3-1" runs backwards`},
		{"-1", `"-1" is not a CPU number`},
		{"0,0", "cpu 0 is listed twice"},
		{"0-2,1", "cpu 1 is listed twice"},
		{"0,", "empty element"},
		{",0", "empty element"},
		{"0,,1", "empty element"},
		{"1-", `"" is not a CPU number`},
		{"-", `"-" is not a CPU number`},
		{"0--1", `"-1" is not a CPU number`},
		{"1.5", `"1.5" is not a CPU number`},
		{"+1", `"+1" is not a CPU number`},
		{"0-7:2", `"7:2" is not a CPU number`},
		{"1024", "above the largest"},
		{"0-99999999999999999999", "above the largest"},
	} {
		s, err := Parse(tc.in)
		if err == nil {
			t.Errorf("Parse(%q) = %q, want an error", tc.in, s)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.wantErr) || strings.Contains(msg, "\n") {
			t.Errorf("Parse(%q): error %q, want one line containing %q", tc.in, msg, tc.wantErr)
		}
	}
}

func TestSetBasics(t *testing.T) {
	var zero Set
	if zero.Len() != 0 || zero.String() != "" || zero.Contains(0) {
		t.Errorf("zero Set: Len %d, String %q", zero.Len(), zero)
	}
	s := Of(3, 1, 1, 2, 7)
	if s.String() != "1-3,7" || s.Len() != 4 || !s.Contains(7) || s.Contains(4) {
		t.Errorf("Of(3,1,1,2,7) = %q, Len %d", s, s.Len())
	}
	c := s.CPUs()
	c[0] = 99
	if s.String() != "1-3,7" {
		t.Errorf("CPUs() shares its slice with the Set: now %q", s)
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		avail          string
		n              int
		server, client string
	}{
		{"0-1", 1, "1", "0"},
		{"0-3", 1, "3", "0-2"},
		{"0-3", 2, "2-3", "0-1"},
		{"0-3", 3, "1-3", "0"},
		{"0,2,5,9", 2, "5,9", "0,2"},
	} {
		avail, err := Parse(tc.avail)
		if err != nil {
			t.Fatal(err)
		}
		server, client, err := Split(avail, tc.n)
		if err != nil || server.String() != tc.server || client.String() != tc.client {
			t.Errorf("Split(%s, %d) = %q, %q, %v; want %q, %q", tc.avail, tc.n, server, client, err, tc.server, tc.client)
		}
	}
	for _, tc := range []struct {
		avail   string
		n       int
		wantErr string
	}{
		{"0-1", 2, "--server-cpus 2 leaves the load generator no CPU: this process may use 2 (0-1)"},
		{"0-1", 3, "--server-cpus 3 leaves the load generator no CPU: this process may use 2 (0-1)"},
		{"0", 1, "--server-cpus 1 leaves the load generator no CPU: this process may use 1 (0)"},
		{"0-1", 0, "--server-cpus 0: the server needs at least 1 CPU"},
		{"0-1", -1, "--server-cpus -1: the server needs at least 1 CPU"},
	} {
		avail, _ := Parse(tc.avail)
		server, client, err := Split(avail, tc.n)
		if err == nil || err.Error() != tc.wantErr {
			t.Errorf("Split(%s, %d) = %q, %q, %v; want error %q", tc.avail, tc.n, server, client, err, tc.wantErr)
		}
	}
}

func TestCheck(t *testing.T) {
	err := check(Of(0, 3), Of(0, 1))
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.CPU != 3 || err.Error() != "cpu 3 is not available: this process may use 0-1" {
		t.Errorf("check(0,3 of 0-1) = %v", err)
	}
	if err := check(Set{}, Of(0)); err == nil {
		t.Error("check(empty) = nil, want an error")
	}
	if err := check(Of(1), Of(0, 1)); err != nil {
		t.Errorf("check(1 of 0-1) = %v", err)
	}
	if e := (errNoLinux{"pinning CPUs"}); e.Error() != "pinning CPUs needs Linux" || !errors.Is(e, errors.ErrUnsupported) {
		t.Errorf("errNoLinux: %q", e)
	}
}
