package flagvalue

import "testing"

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
