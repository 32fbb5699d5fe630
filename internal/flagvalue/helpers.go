package flagvalue

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// SetDefaults changes flags' defaults in fs (a command sharing another's
// flags), each given as NAME=VALUE. A slice flag's value is replaced, not
// Set: after a Set, pflag appends the user's values to it ("--proto rest"
// would read "rest,grpc,rest").
func SetDefaults(fs *pflag.FlagSet, defaults ...string) {
	for _, d := range defaults {
		name, value, _ := strings.Cut(d, "=")
		fl := fs.Lookup(name)
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			sv.Replace(strings.Split(value, ","))
		} else {
			fl.Value.Set(value)
		}
		fl.DefValue = value
	}
}

// ParsePercent reads "0.1%" (or a bare number, also in percent) as a
// fraction within [lo, hi] percent; flag names the flag in the error.
func ParsePercent(flag, s string, lo, hi float64) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("%s %q: want a percentage from %g%% to %g%%", flag, s, lo, hi)
	}
	return v / 100, nil
}

// ExpandAll expands "all" in a list of names to every known name not
// given before it; the names are not checked (the config's Validate does).
func ExpandAll[T ~string](names []string, known []T) []T {
	var out []T
	for _, name := range names {
		n := T(strings.TrimSpace(name))
		if n != "all" {
			out = append(out, n)
			continue
		}
		for _, k := range known {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// CommandLine is a command's name and the flags given to it, as
// --name=value (a list joined with commas), the value of each secret flag
// masked.
func CommandLine(name string, fs *pflag.FlagSet, secret ...string) []string {
	out := []string{name}
	fs.Visit(func(fl *pflag.Flag) {
		v := fl.Value.String()
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		if slices.Contains(secret, fl.Name) {
			v = "***"
		}
		out = append(out, "--"+fl.Name+"="+v)
	})
	return out
}

// DialAddr turns a listen address (":8080", "0.0.0.0:8080") into one to
// dial: an empty or wildcard host is 127.0.0.1.
func DialAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--addr %q: %w", addr, err)
	}
	if port == "" {
		return "", errors.New("--addr: no port")
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}
