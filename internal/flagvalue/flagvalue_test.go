package flagvalue

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestByteSizeFlag(t *testing.T) {
	for in, want := range map[string]int64{
		"1": 1, "1048576": 1 << 20, "8MiB": 8 << 20, "512KiB": 512 << 10, "512kib": 512 << 10,
		"1GiB": 1 << 30, "2MB": 2e6, "10B": 10, " 3 MiB ": 3 << 20,
	} {
		var b ByteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "MiB", "1.5MiB", "1TiB", "9223372036854775807GiB", "x"} {
		var b ByteSize
		if err := b.Set(in); err == nil {
			t.Errorf("Set(%q) = %d, want an error", in, b)
		}
	}
	if s := ByteSize(8 << 20); s.String() != "8MiB" {
		t.Errorf("String() = %q", s.String())
	}
}

func TestHostPortFlag(t *testing.T) {
	for _, ok := range []string{":8080", ":0", "127.0.0.1:0", "0.0.0.0:65535", "[::]:9000", "[::1]:80", "localhost:80", "my-host.example:1", "[fe80::1%eth0]:80"} {
		a := HostPort{MinPort: 0}
		if err := a.Set(ok); err != nil || a.Addr != ok {
			t.Errorf("Set(%q) = %q, %v; want it accepted", ok, a.Addr, err)
		}
	}
	for _, bad := range []string{"", "8080", ":", ":65536", ":99999", ":-1", ":http", "host", "a b:80", "-x:80", "a..b:80", "[::1:80", "1.2.3.4:80:90"} {
		a := HostPort{MinPort: 0}
		if err := a.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted, want an error", bad)
		}
	}
	d := HostPort{MinPort: 1}
	if err := d.Set(":0"); err == nil {
		t.Error("health: port 0 accepted")
	}
}

func TestExpandAll(t *testing.T) {
	known := []string{"a", "b", "c"}
	for _, tt := range []struct{ in, want []string }{
		{[]string{"all"}, known},
		{[]string{"b", "all"}, []string{"b", "a", "c"}},
		{[]string{"all", "b"}, []string{"a", "b", "c", "b"}}, // given twice: the config's Validate says so
		{[]string{" c "}, []string{"c"}},
	} {
		if got := ExpandAll(tt.in, known); !slices.Equal(got, tt.want) {
			t.Errorf("ExpandAll(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParsePercent(t *testing.T) {
	if v, err := ParsePercent("--max-errors", "0.1%", 0, 100); err != nil || v != 0.001 {
		t.Errorf("0.1%%: %v, %v", v, err)
	}
	if v, err := ParsePercent("--precision", " 5 ", 0.1, 100); err != nil || v != 0.05 {
		t.Errorf("5: %v, %v", v, err)
	}
	for _, bad := range []string{"", "x%", "200%", "-1", "0.05%"} {
		if _, err := ParsePercent("--precision", bad, 0.1, 100); err == nil || !strings.HasPrefix(err.Error(), "--precision ") {
			t.Errorf("%q: %v, want an error naming the flag", bad, err)
		}
	}
}

func TestCommandLine(t *testing.T) {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.String("token", "", "")
	fs.StringSlice("proto", nil, "")
	fs.Int("batch", 100, "")
	if err := fs.Parse([]string{"--proto", "rest,grpc", "--token", "s3cret"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"run", "--proto=rest,grpc", "--token=***"}
	if got := CommandLine("run", fs, "token"); !slices.Equal(got, want) {
		t.Errorf("CommandLine = %q, want %q", got, want)
	}
}

func TestDialAddr(t *testing.T) {
	for in, want := range map[string]string{":8080": "127.0.0.1:8080", "0.0.0.0:1": "127.0.0.1:1", "[::]:2": "127.0.0.1:2", "10.0.0.1:3": "10.0.0.1:3"} {
		if got, err := DialAddr(in); err != nil || got != want {
			t.Errorf("DialAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
